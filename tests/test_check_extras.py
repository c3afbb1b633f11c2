"""The guard that the suite passes without each optional extra (tests/check_extras.py)."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("check_extras", TESTS / "check_extras.py")
check_extras = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_extras)


def test_a_module_that_imports_an_extra_when_it_loads_is_known_to_need_it() -> None:
    needs = check_extras.package_needs()
    assert "lm_polygraph" in needs["sigmoid_head.integrations.polygraph"]
    assert "lm_polygraph" not in needs["sigmoid_head.head.layer"]
    assert "matplotlib" not in needs["sigmoid_head.evaluation.plots"]  # imported lazily


def test_a_test_file_that_reached_an_extra_through_the_package_is_at_risk() -> None:
    needs = {"sigmoid_head.plug": {"lm_polygraph"}, "sigmoid_head.core": {"torch"}}
    record = {
        "test_a.py": ["sigmoid_head.plug"],
        "test_b.py": ["sigmoid_head.core"],
        "test_c.py": ["matplotlib"],
    }
    assert check_extras.files_at_risk({"lm_polygraph"}, record, needs)[:1] == ["test_a.py"]
    risky = check_extras.files_at_risk({"matplotlib"}, record, needs)
    assert "test_c.py" in risky and "test_a.py" not in risky and "test_b.py" not in risky


def test_the_installed_extras_map_to_the_packages_they_alone_bring() -> None:
    found = check_extras.extras_modules()
    for tops in found.values():
        assert not tops & {"scipy", "sklearn", "pytest"}  # the dev extra's own
    try:  # installed, whether or not hidden by the blocker (find_spec would raise there)
        importlib.metadata.distribution("lm-polygraph")
    except importlib.metadata.PackageNotFoundError:
        return
    else:
        assert found["polygraph"] == {"lm_polygraph"}


def test_the_blocker_hides_a_package_from_python_and_its_children(tmp_path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import subprocess, sys\n"
        "try:\n    import json\nexcept ModuleNotFoundError:\n    print('hidden')\n"
        "else:\n    print('seen')\n"
        "print(subprocess.run([sys.executable, '-c', 'import json'], capture_output=True,"
        " text=True).returncode)\n"
    )
    env = dict(
        os.environ, SIGMOID_HEAD_HIDE_MODULES="json", PYTHONPATH=str(TESTS / "extras_blocker")
    )
    done = subprocess.run(
        [sys.executable, str(probe)], env=env, capture_output=True, text=True, check=False
    )
    assert done.stdout.split() == ["hidden", "1"], done.stderr
    env.pop("SIGMOID_HEAD_HIDE_MODULES")
    done = subprocess.run(
        [sys.executable, str(probe)], env=env, capture_output=True, text=True, check=False
    )
    assert done.stdout.split() == ["seen", "0"], done.stderr


def test_an_extra_hidden_inside_a_wider_one_reruns_only_what_the_wider_rerun_misses(tmp_path, monkeypatch) -> None:
    """plots hides matplotlib; eval hides matplotlib and sacrebleu: eval's rerun covers every
    plots file that never touches sacrebleu (by record, import or name in its text)."""
    for name, text in {"test_plot.py": "import matplotlib\n",
                       "test_bleu.py": "import matplotlib\n",
                       "test_named.py": "pytest.importorskip('sacrebleu')\n"}.items():
        (tmp_path / name).write_text(text)
    monkeypatch.setattr(check_extras, "TESTS", tmp_path)
    found = {"plots": {"matplotlib"}, "eval": {"matplotlib", "sacrebleu"}, "polygraph": {"lm_polygraph"}}
    record = {"test_plot.py": ["matplotlib"], "test_bleu.py": ["matplotlib", "sacrebleu"],
              "test_named.py": ["matplotlib"]}
    files = ["test_bleu.py", "test_named.py", "test_plot.py"]
    assert check_extras.covered_by("plots", found, files, record, {}) == ("eval", ["test_bleu.py", "test_named.py"])
    assert check_extras.covered_by("eval", found, files, record, {}) == (None, files)
    assert check_extras.covered_by("polygraph", found, ["test_plot.py"], record, {}) == (None, ["test_plot.py"])
