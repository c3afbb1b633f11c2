"""The fuzz rounds' shared fixture: one tiny world (a base model, a trained head, texts) per
test module, built by ``test_bad_heads.make_world``."""

from __future__ import annotations

import pytest
from test_bad_heads import World, make_world


@pytest.fixture(scope="module")
def world(tmp_path_factory, tiny_causal_path) -> World:
    return make_world(tmp_path_factory.mktemp("world"), tiny_causal_path)
