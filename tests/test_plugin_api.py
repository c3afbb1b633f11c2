"""The plugin authors' import (issue 61): one stable module, ``sigmoid_head.plugin``, whose
names are pinned here, and the old paths of the registries (before they had a folder) still
working, with a DeprecationWarning, as the same registry."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[1] / "src")

PINNED = [
    "ENTRY_POINT_GROUP", "HIGHER_BETTER", "HIGHER_WORSE", "NEITHER", "PASS", "READS", "SEQUENCE",
    "SPAN", "TOKEN", "WORD", "BaselineInputs", "Column", "Method", "register_column",
    "register_method", "unregister_column", "unregister_method",
]
"""What plugins may import from sigmoid_head.plugin. A name may be added; none removed."""


def test_the_plugin_module_keeps_its_names() -> None:
    import sigmoid_head.plugin as plugin
    from sigmoid_head.registry import columns, method_type, methods

    assert sorted(plugin.__all__) == sorted(PINNED)
    assert plugin.register_method is methods.register and plugin.Method is method_type.Method
    assert plugin.register_column is columns.register and plugin.Column is columns.Column
    assert plugin.ENTRY_POINT_GROUP == "sigmoid_head.methods"
    assert "sigmoid_head.plugin" in (Path(SRC).parents[0] / "docs" / "extending.md").read_text()


def test_the_plugin_module_is_torch_free() -> None:
    code = "import sys, sigmoid_head.plugin; sys.exit('torch' in sys.modules)"
    env = {**os.environ, "PYTHONPATH": SRC}
    assert subprocess.run([sys.executable, "-c", code], env=env, timeout=120).returncode == 0


@pytest.mark.parametrize("old", ["methods", "columns", "baseline_settings"])
def test_the_old_paths_still_import_with_a_deprecation_warning(old: str) -> None:
    new = importlib.import_module(f"sigmoid_head.registry.{old}")
    sys.modules.pop(f"sigmoid_head.{old}", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(f"sigmoid_head.{old}")
    assert module is new  # the one registry, not a copy
    assert any(issubclass(w.category, DeprecationWarning) and "sigmoid_head.plugin" in str(w.message)
               for w in caught)


OLD_STYLE_PLUGIN = (
    "import warnings\n"
    "warnings.simplefilter('ignore', DeprecationWarning)\n"
    "from sigmoid_head.methods import Method, register\n"
    "from sigmoid_head.registry.methods import METHODS\n"
    "register(Method('oldtop', reads='lm_logits', token_values=lambda rows: rows.logp.max(-1).values))\n"
    "assert 'oldtop' in METHODS\n"
    "from sigmoid_head.registry.columns import column_for\n"
    "assert column_for('oldtop_mean_log') is not None\n"
)


def test_a_plugin_written_against_the_old_import_registers() -> None:
    """The case that lost its column: ``from sigmoid_head.methods import Method, register``."""
    env = {**os.environ, "PYTHONPATH": SRC}
    done = subprocess.run([sys.executable, "-c", OLD_STYLE_PLUGIN], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
