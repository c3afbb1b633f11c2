"""``--config FILE`` on every command: option values from a YAML or JSON file, checked as the
flags are, overridden by the flags given; and the options of evaluate, calibrate,
self-label, push and demo generated from their settings dataclasses."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from sigmoid_head.cli import COMMANDS, build_parser, command_module, main
from sigmoid_head.cli.options import setting_groups, settings_from

FIXTURE = Path(__file__).resolve().parent / "data" / "head_v0_1_0"


def _write(path: Path, values: dict) -> Path:
    if path.suffix == ".json":
        path.write_text(json.dumps(values), encoding="utf-8")
    else:
        import yaml

        path.write_text(yaml.safe_dump(values), encoding="utf-8")
    return path


@pytest.fixture
def ran(monkeypatch: pytest.MonkeyPatch) -> list:
    """The parsed options of each command run (the command itself does nothing)."""
    seen: list = []
    for name in ("evaluate", "train", "push"):
        monkeypatch.setattr(command_module(name), "run", lambda args: seen.append(args) or 0)
    return seen


@pytest.mark.parametrize("suffix", [".yaml", ".yml", ".json"])
def test_a_config_file_gives_values_and_flags_override_them(tmp_path, ran, suffix) -> None:
    cfg = _write(tmp_path / f"c{suffix}", {
        "scores": "s.jsonl", "gold": "g.txt", "n-boot": 7, "ci": False, "gold_field": None,
        "extra_scores": ["a.csv", "b.csv"], "gold-format": "esa", "thresholds": 0.3})
    assert main(["evaluate", "--config", str(cfg)]) == 0
    args = ran[-1]
    assert (args.scores, args.gold, args.n_boot, args.ci, args.gold_field) == (
        "s.jsonl", "g.txt", 7, False, None)
    assert (args.extra_scores, args.gold_format, args.thresholds) == (
        ["a.csv", "b.csv"], "esa", "0.3")
    assert main(["evaluate", "--config", str(cfg), "--n-boot", "9", "--ci", "--gold", "h.txt"]) == 0
    assert (ran[-1].n_boot, ran[-1].ci, ran[-1].gold) == (9, True, "h.txt")


def test_required_options_may_come_from_the_file(tmp_path, ran, capsys) -> None:
    cfg = _write(tmp_path / "t.yaml", {"train_file": "pairs.jsonl", "output-dir": "out",
                                       "lr": "2e-3", "negatives": "uniform"})
    assert main(["train", "--config", str(cfg), "--epochs", "2"]) == 0
    args = ran[-1]
    assert (args.train_file, args.output_dir, args.lr, args.negatives, args.epochs) == (
        "pairs.jsonl", "out", 2e-3, "uniform", 2)
    with pytest.raises(SystemExit):  # without the file they are required, as before
        main(["train", "--epochs", "2"])
    assert "required" in capsys.readouterr().err


def _error(capsys, argv: list[str]) -> str:
    """The one line a refused command prints (exit code 2)."""
    try:
        code = main(argv)
    except SystemExit as stop:
        code = stop.code
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    return err[-1]


@pytest.mark.parametrize("key, value, flag", [
    ("n-boot", 0, ["--n-boot", "0"]),
    ("n_boot", "many", ["--n-boot", "many"]),
    ("gold-format", "tsv", ["--gold-format", "tsv"]),
])
def test_a_bad_value_in_the_file_gets_the_flags_error(tmp_path, ran, capsys, key, value, flag) -> None:
    cfg = _write(tmp_path / "c.yaml", {"scores": "s", "gold": "g", key: value})
    line = _error(capsys, ["evaluate", "--config", str(cfg)])
    flag_line = _error(capsys, ["evaluate", "--scores", "s", "--gold", "g", *flag])
    reason = flag_line.split(f"argument {flag[0]}: ", 1)[1]
    assert line == f"sigmoid-head evaluate: error: {cfg}: {key}: {reason}"
    assert not ran  # nothing ran


@pytest.mark.parametrize("values, text, message", [
    ({"scores": "s", "nope": 1}, None, "unknown key 'nope' (not an option of sigmoid-head evaluate)"),
    ({"scores": "s", "batch-size": 4}, None, "unknown key 'batch-size'"),  # score's, not evaluate's
    ({"n-boot": 3, "n_boot": 4}, None, "'n-boot' and 'n_boot' are the same option"),
    ({"ci": "no"}, None, "ci: expected true or false, got 'no'"),
    ({"n-boot": None}, None, "n-boot: null is not a value of this option"),
    ({"extra-scores": "a.csv"}, None, "extra-scores: expected a list"),
    ({"methods": {"a": 1}}, None, "methods: expected a single number or string"),
    ({"help": True}, None, "unknown key 'help'"),
    (None, "scores: [s\n", "not valid YAML"),
    (None, "- scores\n", "a mapping of option names to values"),
])
def test_bad_files_are_refused_in_one_line(tmp_path, ran, capsys, values, text, message) -> None:
    cfg = tmp_path / "c.yaml"
    if values is None:
        cfg.write_text(text, encoding="utf-8")
    else:
        _write(cfg, values)
    line = _error(capsys, ["evaluate", "--config", str(cfg), "--scores", "s", "--gold", "g"])
    assert line.startswith(f"sigmoid-head evaluate: error: {cfg}: ") and message in line
    assert not ran


@pytest.mark.parametrize("name, text, message", [
    ("missing.yaml", None, "cannot read the --config file"),
    ("c.json", '{"scores": ', "not valid JSON"),
    ("c.toml", "scores = 1", "a --config file is .yaml, .yml or .json"),
])
def test_unreadable_files_are_refused(tmp_path, ran, capsys, name, text, message) -> None:
    if text is not None:
        (tmp_path / name).write_text(text, encoding="utf-8")
    line = _error(capsys, ["evaluate", "--config", str(tmp_path / name)])
    assert line.startswith(f"sigmoid-head evaluate: error: {tmp_path / name}: ") and message in line
    assert not ran


def test_positional_arguments_stay_on_the_command_line(tmp_path, ran, capsys) -> None:
    cfg = _write(tmp_path / "p.json", {"card-only": True, "license": "mit", "private": None})
    assert main(["push", "head", "me/repo", "--config", str(cfg)]) == 0
    assert (ran[-1].head, ran[-1].card_only, ran[-1].license, ran[-1].private) == (
        "head", True, "mit", None)
    _write(cfg, {"repo_id": "me/repo"})
    assert "a positional argument" in _error(capsys, ["push", "head", "x/y", "--config", str(cfg)])


def test_score_takes_its_batch_size_and_output_from_the_file(tmp_path, monkeypatch) -> None:
    import sigmoid_head.scoring.corpus as corpus

    src, cand = tmp_path / "src.txt", tmp_path / "cand.txt"
    src.write_text("In the beginning\nAnd the earth\n", encoding="utf-8")
    cand.write_text("God created\nwas without form\n", encoding="utf-8")
    out = tmp_path / "scores.jsonl"
    cfg = _write(tmp_path / "score.yaml", {"batch-size": 1, "to_json": str(out), "quiet": True,
                                           "head": str(FIXTURE / "head"),
                                           "model": str(FIXTURE / "base"), "device": "cpu"})
    seen, real = [], corpus.score_corpus
    monkeypatch.setattr(corpus, "score_corpus",
                        lambda model, inputs, config, **kw: seen.append(config) or real(
                            model, inputs, config, **kw))
    assert main(["score", "--config", str(cfg), "-s", str(src), "-t", str(cand)]) == 0
    assert seen[-1].batch_size == 1 and seen[-1].to_json == str(out)
    assert len(out.read_text(encoding="utf-8").splitlines()) == 2
    assert main(["score", "--config", str(cfg), "-s", str(src), "-t", str(cand),
                 "--batch-size", "2"]) == 0
    assert seen[-1].batch_size == 2


def test_every_command_takes_a_config_file() -> None:
    for name in COMMANDS:
        sub = next(a for a in build_parser([name])._actions if a.dest == "command").choices[name]
        assert "--config" in sub._option_string_actions, name


SETTINGS = {"evaluate": "sigmoid_head.evaluation.settings.EvaluateConfig",
            "calibrate": "sigmoid_head.evaluation.settings.CalibrateConfig",
            "self-label": "sigmoid_head.training.self_label_config.SelfLabelConfig",
            "push": "sigmoid_head.head.push_config.PushConfig",
            "demo": "sigmoid_head.demo.config.DemoConfig"}


def _settings(path: str) -> type:
    from importlib import import_module

    module, name = path.rsplit(".", 1)
    return getattr(import_module(module), name)


def _fields(cls: type) -> dict[str, dataclasses.Field]:
    groups = setting_groups(cls) or {"": cls}
    return {f.name: f for g in groups.values() for f in dataclasses.fields(g)}


@pytest.mark.parametrize("command", sorted(SETTINGS))
def test_options_are_the_settings_fields(command: str) -> None:
    """Every option of the command (but --threads, --config and positional arguments) is a
    field of its settings, with the field's docstring as help and its default; each group
    of the settings is an option group."""
    cls = _settings(SETTINGS[command])
    sub = next(a for a in build_parser([command])._actions if a.dest == "command").choices[command]
    options = {a.dest: a for a in sub._actions
               if a.option_strings and a.dest not in ("help", "threads", "config")}
    fields = _fields(cls)
    assert set(options) == set(fields)
    for name, f in fields.items():
        assert options[name].help, name
        default = f.default_factory() if f.default is dataclasses.MISSING and \
            f.default_factory is not dataclasses.MISSING else f.default
        if default is not dataclasses.MISSING:
            assert options[name].default == default, name
    titles = {g.title for g in sub._action_groups}
    for group in setting_groups(cls).values():
        assert group.TITLE in titles


def test_settings_are_built_back_from_the_options() -> None:
    from sigmoid_head.demo.config import DemoConfig
    from sigmoid_head.evaluation.settings import EvaluateConfig

    parser = build_parser(["evaluate"])
    args = parser.parse_args(["evaluate", "--scores", "s", "--gold", "g", "--no-ci"])
    config = settings_from(EvaluateConfig, vars(args))
    assert (config.inputs.scores, config.bootstrap.ci, config.bootstrap.n_boot) == ("s", False, 1000)
    demo = settings_from(DemoConfig, vars(build_parser(["demo"]).parse_args(["demo", "--smoke"])))
    assert demo.run_kwargs()["n_train"] == 24 and demo.run_kwargs()["out_dir"] == "demo-output"
    with pytest.raises(ValueError, match="n_train must be in"):
        DemoConfig(n_train=0)


@pytest.mark.parametrize("argv, message", [
    (["demo", "--n-train", "0"], "argument --n-train: 0: must be in [1, inf)"),
    (["self-label", "--train-file", "t", "-o", "o", "--samples", "-1"], "argument --samples"),
    (["self-label", "--train-file", "t", "-o", "o", "--rule", "any"], "invalid choice: 'any'"),
    (["calibrate", "--head", "h", "--scores", "s", "--gold-format", "x"], "invalid choice: 'x'"),
])
def test_generated_options_keep_their_checks(capsys, argv, message) -> None:
    assert message in _error(capsys, argv)


def test_evaluate_with_a_yaml_config_still_needs_no_torch(tmp_path) -> None:
    import subprocess
    import sys

    scores, gold = tmp_path / "scores.jsonl", tmp_path / "gold.txt"
    scores.write_text("".join(json.dumps({"sigmoid": v}) + "\n" for v in (0.9, 0.2, 0.7, 0.1)))
    gold.write_text("1\n0\n1\n0\n")
    cfg = _write(tmp_path / "e.yaml", {"scores": str(scores), "gold": str(gold), "ci": False})
    probe = ("import sys; from sigmoid_head.cli import main; "
             f"assert main(['evaluate', '--config', {str(cfg)!r}]) == 0; "
             "assert 'torch' not in sys.modules, 'torch was imported'")
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "sigmoid" in res.stdout
