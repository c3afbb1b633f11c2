"""A finished head folder holds the head only (checkpoint/ and best/ on request); the
training bar's time left counts the cache-filling and the cached steps apart."""

from __future__ import annotations

from sigmoid_head.training.loop import train
from sigmoid_head.training.progress import CACHED, FILL, StepClock, clock_text


def test_a_finished_run_keeps_only_the_head(
    train_config, tiny_causal_path, tiny_pairs_jsonl, tmp_path
) -> None:
    train(
        train_config(
            tiny_causal_path,
            tiny_pairs_jsonl,
            tmp_path / "a",
            max_steps=6,
            eval_every=3,
            keep_checkpoints=False,
        )
    )
    names = {p.name for p in (tmp_path / "a").iterdir()}
    assert "head.safetensors" in names and "head_config.json" in names
    assert not names & {"checkpoint", "best"}, names
    train(
        train_config(
            tiny_causal_path,
            tiny_pairs_jsonl,
            tmp_path / "b",
            max_steps=6,
            eval_every=3,
            keep_checkpoints=True,
        )
    )
    assert {"checkpoint", "best"} <= {p.name for p in (tmp_path / "b").iterdir()}


def test_keep_checkpoints_is_a_train_option() -> None:
    from sigmoid_head.cli import build_parser

    args = build_parser(["train"]).parse_args(["train", "--output-dir", "x", "--train-file", "t"])
    assert args.keep_checkpoints is False
    args = build_parser(["train"]).parse_args(
        ["train", "--output-dir", "x", "--train-file", "t", "--keep-checkpoints"]
    )
    assert args.keep_checkpoints is True


def test_time_left_uses_one_rate_per_kind() -> None:
    clock = StepClock()
    assert clock.left(10, 100) == "?"
    for _ in range(4):
        clock.add(FILL, 60.0)  # the first epoch: the frozen model runs (a minute a step)
    # no cached step timed yet: the filling steps' time, and how many cached steps follow
    assert clock.left(6, 400) == "6:00 + 400 cached steps"
    clock.add(CACHED, 1.5)
    # 400 cached steps at 1.5 s, not at the filling rate (which would say 6:40:00)
    assert clock.left(0, 400) == "10:00"
    assert clock.left(2, 2400) == "1:02:00"
    assert clock_text(59.6) == "1:00"


def test_the_bar_shows_time_left_with_the_cache(
    train_config, tiny_causal_path, tiny_pairs_jsonl, tmp_path, capsys
) -> None:
    train(
        train_config(
            tiny_causal_path,
            tiny_pairs_jsonl,
            tmp_path,
            max_steps=8,
            epochs=2,
            eval_every=100,
            cache_hidden=True,
            progress=True,
        )
    )
    err = capsys.readouterr().err
    assert "left=" in err and "<" not in err.split("train:")[-1].split("]")[0], err[-500:]
