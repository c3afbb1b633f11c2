"""Methods from outside the package: the ``sigmoid_head.registry.methods`` entry-point group.

A tiny plugin distribution is built and installed into a temporary directory (no index, no
build isolation), then the real ``score`` and ``evaluate`` commands run in a fresh
interpreter with it on the path: its method's columns are in both outputs. A plugin that
fails to import costs a one-line warning, not the command.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

PLUGIN = '''
"""A toy scoring method: the log of the largest softmax probability at each position."""

from sigmoid_head.plugin import Method, register_method


def top_probability(rows):
    return rows.logp.max(-1).values


def setup():
    register_method(Method("plugtop", reads="lm_logits", token_values=top_probability))
'''


def _install(tmp_path: Path, name: str, module: str, entry: str) -> Path:
    """Build and install a one-module distribution whose entry point is ``entry``; returns
    the directory it was installed into."""
    src = tmp_path / name
    src.mkdir()
    (src / f"{name}.py").write_text(module, encoding="utf-8")
    (src / "pyproject.toml").write_text(textwrap.dedent(f'''
        [build-system]
        requires = ["setuptools"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "{name}"
        version = "0.1"

        [tool.setuptools]
        py-modules = ["{name}"]

        [project.entry-points."sigmoid_head.methods"]
        {name} = "{entry}"
        '''), encoding="utf-8")
    site = tmp_path / f"site_{name}"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps",
                           "--no-build-isolation", "--no-index", "--quiet", "--target",
                           str(site), str(src)], capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        pytest.skip(f"cannot build the plugin here: {done.stderr.strip()[-300:]}")
    return site


def _cli(site: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(SRC)]),
           "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "sigmoid_head.cli", *args], env=env,
                          capture_output=True, text=True, timeout=600)


def test_an_installed_plugin_method_is_scored_and_evaluated(tmp_path, tiny_causal_path,
                                                             texts) -> None:
    site = _install(tmp_path, "toy_sh_plugin", PLUGIN, "toy_sh_plugin:setup")
    out = tmp_path / "s.jsonl"
    done = _cli(site, "score", "-s", str(texts[0]), "-t", str(texts[1]), "--model",
                str(tiny_causal_path), "--to-json", str(out), "--quiet", "--device", "cpu")
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert all({"plugtop", "plugtop_mean_log", "plugtop_min"} <= set(r) for r in rows)
    assert "\nplugtop " in done.stdout  # the summary
    gold = tmp_path / "gold.txt"
    gold.write_text("".join(f"{i % 2}\n" for i in range(len(rows))), encoding="utf-8")
    done = _cli(site, "evaluate", "--scores", str(out), "--gold", str(gold), "--no-ci")
    assert done.returncode == 0, done.stderr
    assert "plugtop_geo_mean" in done.stdout and "plugtop_min" in done.stdout


def test_a_broken_plugin_is_a_one_line_warning(tmp_path, tiny_causal_path, texts) -> None:
    site = _install(tmp_path, "broken_sh_plugin", "raise RuntimeError('no luck\\nat all')\n",
                    "broken_sh_plugin")
    out = tmp_path / "s.jsonl"
    done = _cli(site, "score", "-s", str(texts[0]), "-t", str(texts[1]), "--model",
                str(tiny_causal_path), "--to-json", str(out), "--quiet", "--device", "cpu")
    assert done.returncode == 0, done.stderr
    warned = [line for line in done.stderr.splitlines() if "broken_sh_plugin" in line]
    assert len(warned) == 1 and "RuntimeError: no luck" in warned[0]
    assert "softmax_mean_log" in json.loads(out.read_text().splitlines()[0])
