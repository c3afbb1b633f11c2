"""Issue 13: nothing lost, nothing silently wrong, a clear message for every bad input and fault.

One test (or a few) per numbered point of the issue; the bad-input corpus run against
every reader is in tests/fuzz/.
"""

from __future__ import annotations

import errno
import gzip
import json
import os
from pathlib import Path

import pytest
import torch

from sigmoid_head.cli import main as cli_main
from sigmoid_head.data.records import read_jsonl, read_lines, read_records
from sigmoid_head.head.folder import CONFIG_NAME, WEIGHTS_NAME, load_head_files
from sigmoid_head.head.model import SigmoidHeadModel
from sigmoid_head.safe import files as io_utils
from sigmoid_head.safe import resumable_jsonl
from sigmoid_head.safe.files import DirectoryLock, LockedError, WriteError
from sigmoid_head.safe.resumable_jsonl import ResumableJsonlWriter
from sigmoid_head.training.checkpoint import recover_checkpoint
from sigmoid_head.training.config import TrainConfig


class Killed(BaseException):
    """Stands for SIGKILL at a fault point (not an Exception: nothing may catch it)."""


def _kill_at(monkeypatch, n: int) -> list[str]:
    """Make the n-th fault point (0-based) raise Killed; returns the names seen."""
    seen: list[str] = []

    def point(name: str) -> None:
        seen.append(name)
        if len(seen) == n + 1:
            raise Killed(name)

    monkeypatch.setattr(io_utils, "fault_point", point)
    return seen


def _error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


# -- 1. concurrent runs into one output directory -----------------------------------------

def test_1_second_run_into_a_locked_output_dir_is_refused(tmp_path, tiny_pairs_jsonl, capsys):
    with DirectoryLock(tmp_path / "out", what="training run"):
        with pytest.raises(LockedError, match="in use by another training run"), \
                DirectoryLock(tmp_path / "out"):
            pass
        code = cli_main(["train", "--train-file", str(tiny_pairs_jsonl), "--output-dir",
                         str(tmp_path / "out"), "--no-progress"])
    assert code == 2
    line = _error_line(capsys)
    assert "in use by another training run" in line and str(tmp_path / "out") in line
    with DirectoryLock(tmp_path / "out"):  # released: the next run may go
        pass


# -- 2. numeric options --------------------------------------------------------------------

@pytest.mark.parametrize("option,value,says", [
    ("--max-validation-examples", "-1", "max_validation_examples must be >= 1"),
    ("--lr", "inf", "lr must be a finite number"),
    ("--lr", "nan", "lr must be"),
    ("--epochs", "inf", "epochs must be a finite number"),
    ("--weight-decay", "-1", "weight_decay must be >= 0"),
    ("--softmax-temperature", "inf", "softmax_temperature must be a finite number"),
    ("--eval-every", "-3", "eval_every must be >= 0"),
])
def test_2_train_refuses_bad_numbers(option, value, says, tiny_pairs_jsonl, tmp_path, capsys):
    code = cli_main(["train", "--train-file", str(tiny_pairs_jsonl), "--output-dir",
                     str(tmp_path / "out"), option, value])
    assert code == 2
    assert says in _error_line(capsys)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command,option,value", [
    ("score", "--batch-size", "0"), ("score", "--max-tokens", "-5"),
    ("generate", "--temperature", "inf"), ("generate", "--top-p", "1.5"),
    ("generate", "--max-new-tokens", "0"), ("generate", "--mc-samples", "-1"),
])
def test_2_score_and_generate_refuse_bad_numbers(command, option, value, capsys):
    with pytest.raises(SystemExit) as exc:
        cli_main([command, "-s", "x.txt", option, value])
    assert exc.value.code == 2
    assert option in capsys.readouterr().err


# -- 3. prompt templates -----------------------------------------------------------------------

@pytest.mark.parametrize("template,says", [
    ("hello", "must contain {source}"),
    ("{source} {lang}", "uses {lang}"),
    ("{source} {", "not a valid template"),
    ("{}", "positional field"),
])
def test_3_templates_checked_the_same_in_train_and_score(template, says, texts, tiny_pairs_jsonl,
                                                        tmp_path, capsys):
    code = cli_main(["score", "-s", str(texts[0]), "-t", str(texts[1]), "--model", "no/such-model",
                     "--prompt-template", template])
    assert code == 2 and says in _error_line(capsys)  # refused before any model is loaded
    code = cli_main(["train", "--train-file", str(tiny_pairs_jsonl), "--output-dir",
                     str(tmp_path / "o"), "--prompt-template", template])
    assert code == 2 and says in _error_line(capsys)


def test_3_judge_template_checked(texts, capsys):
    code = cli_main(["score", "-s", str(texts[0]), "-t", str(texts[1]), "--self-judge",
                     "--judge-template", "{source} {cand}"])
    assert code == 2 and "uses {cand}" in _error_line(capsys)


# -- 4. a saved head is one unit; checkpoints survive a kill between renames --------------------

def _fresh_head(path, scale: float) -> SigmoidHeadModel:
    model = SigmoidHeadModel.from_base(str(path), device="cpu")
    with torch.no_grad():
        model.head.weight.mul_(scale)
    return model


def test_4_kill_at_every_write_point_leaves_old_or_new_head(tiny_causal_path, tmp_path,
                                                            monkeypatch):
    old, new = _fresh_head(tiny_causal_path, 1.0), _fresh_head(tiny_causal_path, 2.0)
    seen = _kill_at(monkeypatch, 10**9)
    new.save_pretrained(tmp_path / "probe")
    points = len(seen)
    assert points >= 4, seen  # weights written, config written, two renames
    for n in range(points + 1):
        d = tmp_path / f"kill{n}"
        monkeypatch.setattr(io_utils, "fault_point", lambda name: None)
        old.save_pretrained(d)
        _kill_at(monkeypatch, n)
        try:
            new.save_pretrained(d)
            killed = False
        except Killed:
            killed = True
        assert killed == (n < points)
        monkeypatch.setattr(io_utils, "fault_point", lambda name: None)
        config, state = load_head_files(d)
        is_old = torch.equal(state["weight"], old.head.weight)
        is_new = torch.equal(state["weight"], new.head.weight)
        assert is_old or is_new, f"kill at point {n} left a mix"
        assert config.weights_sha256 == io_utils_sha(d / WEIGHTS_NAME)
        SigmoidHeadModel.from_pretrained(d, old.backbone)  # loads


def io_utils_sha(path: Path) -> str:
    from sigmoid_head.head.folder import file_sha256

    return file_sha256(path)


def test_4_new_weights_with_old_config_are_refused(tiny_causal_path, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    _fresh_head(tiny_causal_path, 1.0).save_pretrained(a)
    _fresh_head(tiny_causal_path, 2.0).save_pretrained(b)
    (a / WEIGHTS_NAME).write_bytes((b / WEIGHTS_NAME).read_bytes())
    with pytest.raises(ValueError, match="does not match"):
        load_head_files(a)


def test_4_checkpoint_killed_between_renames_is_resumed(tmp_path, caplog):
    ck = tmp_path / "checkpoint"
    for suffix, expect in ((".tmp", "newest"), (".old", "previous")):
        d = ck.with_name(ck.name + suffix)
        d.mkdir()
        (d / "state.pt").write_bytes(b"x")
        (d / "trainer_state.json").write_text("{}")
        assert recover_checkpoint(ck)
        assert ck.is_dir() and not d.exists() and expect in caplog.text
        import shutil

        shutil.rmtree(ck)
    partial = ck.with_name("checkpoint.tmp")
    partial.mkdir()
    (partial / "state.pt").write_bytes(b"x")  # no trainer_state.json: incomplete
    assert not recover_checkpoint(ck)
    assert "incomplete checkpoint" in caplog.text


def test_4_train_resumes_after_kill_between_checkpoint_renames(tiny_causal_path, tiny_pairs_jsonl,
                                                               tmp_path, monkeypatch, capsys):
    from sigmoid_head.training.loop import train

    kw = dict(train_file=str(tiny_pairs_jsonl), output_dir=str(tmp_path), model=str(tiny_causal_path),
              batch_size=16, max_steps=4, save_every=2, eval_every=100, patience=0, progress=False,
              validation_fraction=0, device="cpu")
    seen: list[str] = []

    def point(name: str) -> None:  # kill the second checkpoint between its renames
        seen.append(name)
        if name == "replace checkpoint" and seen.count("checkpoint complete") == 2:
            raise Killed(name)

    monkeypatch.setattr(io_utils, "fault_point", point)
    with pytest.raises(Killed):
        train(TrainConfig(**kw))
    assert not (tmp_path / "checkpoint").exists()
    assert (tmp_path / "checkpoint.tmp" / "trainer_state.json").is_file()
    monkeypatch.setattr(io_utils, "fault_point", lambda name: None)
    train(TrainConfig(**kw))
    assert "resuming from step 4" in capsys.readouterr().out


# -- 5. byte-order marks ----------------------------------------------------------------------

@pytest.mark.parametrize("name,body", [
    ("a.tsv", "src\ttgt\n"), ("a.txt", "src\n"), ("a.jsonl", '{"source": "src", "target": "tgt"}\n'),
])
def test_5_bom_is_dropped_everywhere(name, body, tmp_path):
    path = tmp_path / name
    path.write_bytes(b"\xef\xbb\xbf" + body.encode())
    rec = read_records(path)[0]
    assert rec.get("source", rec.get("text")) == "src"
    gz = tmp_path / (name + ".gz")
    gz.write_bytes(gzip.compress(b"\xef\xbb\xbf" + body.encode()))
    rec = read_records(gz)[0]
    assert rec.get("source", rec.get("text")) == "src"
    assert read_lines(path)[0].startswith(("src", '{"source"'))


# -- 6/7. JSONL split at \n only; score reads .jsonl.gz --------------------------------------

def test_6_7_u2028_and_gz_inputs_are_read_and_evaluate_reads_what_score_wrote(
        head_dir, tmp_path, capsys):
    from sigmoid_head.evaluation.readers import read_score_columns

    recs = [{"source": "la\u2028casa", "candidate": "the\u2028home"},
            {"source": "el gato", "candidate": "a cat"}]
    body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs).encode()
    assert len(read_jsonl(_write(tmp_path / "in.jsonl", body))) == 2
    inp = _write(tmp_path / "in.jsonl.gz", gzip.compress(body))
    out = tmp_path / "out.jsonl"
    code = cli_main(["score", "--input", str(inp), "--head", str(head_dir), "--to-json", str(out),
                     "--quiet", "--device", "cpu"])
    assert code == 0, capsys.readouterr().err
    assert "\u2028" in out.read_text(encoding="utf-8")
    assert len(read_score_columns(out)["sigmoid"]) == 2


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


# -- 9. max_length capped at the model's position limit ----------------------------------------

def test_9_long_inputs_on_a_gpt2_model_are_capped_not_crashed(tiny_gpt2_path):
    from sigmoid_head.lm.backbone import load_backbone
    from sigmoid_head.scoring.force_decode import score_records

    backbone = load_backbone(str(tiny_gpt2_path), device="cpu")
    limit = backbone.max_positions()
    assert limit == backbone.model.config.n_positions
    long = " ".join(["the dog eats the bread"] * limit)
    with pytest.warns(UserWarning, match="truncated"):
        rows = score_records(backbone, [{"source": "x", "candidate": long},
                                        {"source": "x", "candidate": "a cat"}],
                             max_length=None, progress=False)
    assert rows[0]["truncated"] is True and "truncated" not in rows[1]
    assert rows[0]["n_tokens"] < limit


def test_9_train_caps_max_length(tiny_gpt2_path, tmp_path, caplog):
    from sigmoid_head.training.loop import train

    data = tmp_path / "long.txt"
    data.write_text("\n".join([" ".join(["the dog eats the bread"] * 200)] * 4) + "\n")
    model = train(TrainConfig(train_file=str(data), output_dir=str(tmp_path / "o"),
                              model=str(tiny_gpt2_path), max_length=100000, max_steps=1,
                              validation_fraction=0, progress=False, device="cpu"))
    assert "exceeds the model's" in caplog.text
    assert model.config.training["max_length"] == 256


# -- 10/11. streamed, resumable score output -------------------------------------------------------

def test_10_writer_keeps_complete_records_and_resumes(tmp_path, monkeypatch):
    out = tmp_path / "o.jsonl"
    rows = [{"i": i, "text": "x" * i} for i in range(6)]
    _kill_at(monkeypatch, 3)  # killed after the 4th record is on disk
    with pytest.raises(Killed), ResumableJsonlWriter(out, key="k", total=6) as w:
        w.write_many(rows)
    monkeypatch.setattr(io_utils, "fault_point", lambda name: None)
    assert not out.exists()  # nothing a later run would trust as complete
    partial = out.with_name("o.jsonl.partial")
    with open(partial, "ab") as f:
        f.write(b'{"i": 4, "te')  # a cut-off last record
    with pytest.raises(ValueError, match="another run"):
        ResumableJsonlWriter(out, key="other", total=6)
    with ResumableJsonlWriter(out, key="k", total=6) as w:
        assert w.done == 4
        w.write_many(rows[w.done:])
    assert [json.loads(x) for x in out.read_text().splitlines()] == rows
    assert not partial.exists()


def test_11_full_disk_ends_on_a_complete_record(tmp_path, monkeypatch):
    out = tmp_path / "o.jsonl"
    w = ResumableJsonlWriter(out, key="k", total=5)
    w.write_many([{"i": 0}, {"i": 1}])
    real_fsync, calls = io_utils.os.fsync, []

    def fsync(fd):
        calls.append(fd)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_fsync(fd)

    monkeypatch.setattr(io_utils.os, "fsync", fsync)
    with pytest.raises(WriteError, match=r"disk is full.*3 of 5 records are saved"):
        w.write_many([{"i": 2}, {"i": 3}, {"i": 4}])
    monkeypatch.undo()
    lines = out.with_name("o.jsonl.partial").read_bytes().split(b"\n")
    assert lines[-1] == b"" and [json.loads(x)["i"] for x in lines[:-1]] == [0, 1, 2]


def test_10_bad_output_path_is_refused_before_any_work(texts, tmp_path, capsys):
    code = cli_main(["score", "-s", str(texts[0]), "-t", str(texts[1]), "--model", "no/such",
                     "--to-json", str(tmp_path)])
    assert code == 2 and "is a directory" in _error_line(capsys)


def test_10_score_crash_keeps_rows_and_rerun_continues(head_dir, texts, tmp_path, monkeypatch,
                                                       capsys):
    full, out = tmp_path / "full.jsonl", tmp_path / "out.jsonl"
    args = ["score", "-s", str(texts[0]), "-t", str(texts[1]), "--head", str(head_dir), "--quiet",
            "--device", "cpu", "--batch-size", "1"]
    # rows reach the disk a window at a time (here: windows of one input)
    monkeypatch.setattr("sigmoid_head.scoring.distributed.DEFAULT_WINDOW_BATCHES", 1)
    assert cli_main([*args, "--to-json", str(full)]) == 0
    _kill_at(monkeypatch, 2)  # the run dies after 3 rows
    with pytest.raises(Killed):
        cli_main([*args, "--to-json", str(out)])
    monkeypatch.setattr(io_utils, "fault_point", lambda name: None)
    assert not out.exists()
    assert len(resumable_jsonl.read_complete_jsonl(out)) >= 3
    capsys.readouterr()
    assert cli_main([*args, "--to-json", str(out)]) == 0
    assert "continuing after" in capsys.readouterr().out
    assert out.read_text() == full.read_text()


# -- 12 and the raw-traceback list -----------------------------------------------------------------

def test_12_score_records_accepts_a_generator(head_dir, tiny_causal_path, cli_pairs):
    from sigmoid_head.scoring.force_decode import score_records

    model = SigmoidHeadModel.from_pretrained(head_dir, str(tiny_causal_path), device="cpu")
    pairs = zip(*cli_pairs, strict=True)
    rows = score_records(model, ({"source": s, "candidate": c} for s, c in pairs), progress=False)
    assert len(rows) == len(cli_pairs[0])


def test_12_train_checks_data_before_loading_the_model(tmp_path, capsys):
    code = cli_main(["train", "--train-file", str(tmp_path / "missing.jsonl"), "--output-dir",
                     str(tmp_path / "o"), "--model", "no/such-model-anywhere"])
    assert code == 2 and "missing.jsonl" in _error_line(capsys)


@pytest.mark.parametrize("damage,says", [
    (lambda d: (d / CONFIG_NAME).write_text("{}"), "missing base_model"),
    (lambda d: (d / CONFIG_NAME).write_text('{"base_model": '), "corrupt head config"),
    (lambda d: (d / WEIGHTS_NAME).write_bytes((d / WEIGHTS_NAME).read_bytes()[:100]),
     "does not match"),
    (lambda d: (d / WEIGHTS_NAME).unlink(), "no head.safetensors"),
])
def test_bad_heads_give_one_line_naming_the_file(damage, says, head_dir, texts, tmp_path, capsys):
    import shutil

    d = tmp_path / "h"
    shutil.copytree(head_dir, d)
    damage(d)
    code = cli_main(["score", "-s", str(texts[0]), "-t", str(texts[1]), "--head", str(d),
                     "--device", "cpu", "--quiet"])
    assert code == 2
    line = _error_line(capsys)
    assert says in line and str(d) in line


def test_truncated_weights_without_hash_name_the_file(head_dir, tmp_path):
    import shutil

    d = tmp_path / "h"
    shutil.copytree(head_dir, d)
    cfg = json.loads((d / CONFIG_NAME).read_text())
    cfg.pop("weights_sha256")  # a head written before weights were hashed
    (d / CONFIG_NAME).write_text(json.dumps(cfg))
    (d / WEIGHTS_NAME).write_bytes((d / WEIGHTS_NAME).read_bytes()[:100])
    with pytest.raises(ValueError, match="corrupt or truncated weights file"):
        load_head_files(d)


@pytest.mark.parametrize("argv,says", [
    (["--device", "bogus"], "unknown device 'bogus'"),
    (["--model", "./no/such/dir"], "model path not found"),
])
def test_bad_model_and_device_give_one_line(argv, says, texts, capsys):
    code = cli_main(["score", "-s", str(texts[0]), "-t", str(texts[1]), "--quiet", *argv])
    assert code == 2 and says in _error_line(capsys)


def test_model_dir_without_weights(tmp_path, texts, capsys):
    (tmp_path / "config.json").write_text('{"model_type": "gpt2"}')
    code = cli_main(["score", "-s", str(texts[0]), "-t", str(texts[1]), "--quiet",
                     "--model", str(tmp_path), "--device", "cpu"])
    assert code == 2 and f"cannot load model from {tmp_path}" in _error_line(capsys)


def test_full_disk_on_checkpoint_names_the_disk(tmp_path, monkeypatch):
    from sigmoid_head.training import checkpoint as ck

    def boom(*a, **k):
        raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 64 vs 0")

    monkeypatch.setattr(ck.torch, "save", boom)
    head = torch.nn.Linear(2, 2)
    opt = torch.optim.SGD(head.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
    cfg = TrainConfig(train_file="x.jsonl", output_dir=str(tmp_path))
    with pytest.raises(WriteError, match="disk is full"):
        ck.save_checkpoint(tmp_path / "checkpoint", cfg, ck.TrainState(), head, opt, sched)
    assert not (tmp_path / "checkpoint.tmp").exists()


# -- 8. a candidate with leading whitespace under the chat template --------------------------------

class _MergingTokenizer:
    """Characters as ids, except that a newline followed by a space is one token (as in
    SmolLM2's BPE, where the generation prompt's newline merges with a reply's spaces)."""

    chat_template = "chatml"
    all_special_ids = [2]
    added_tokens_decoder: dict = {}

    def __call__(self, text, add_special_tokens=False):
        ids, i = [], 0
        while i < len(text):
            if text[i : i + 2] == "\n ":
                ids.append(1000)
                i += 2
            else:
                ids.append(ord(text[i]))
                i += 1
        return {"input_ids": ids}

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=False):
        text = "".join(f"\x01{m['role']}\n{m['content']}\x02\n" for m in messages)
        return text + ("\x01assistant\n" if add_generation_prompt else "")


@pytest.mark.parametrize("reply", ["hi there", "  hi there", " hi", "\thi"])
def test_8_chat_reply_with_leading_whitespace_is_scored(reply):
    from sigmoid_head.data.tokenize import _chat_example

    tok = _MergingTokenizer()
    msgs = [{"role": "user", "content": "hola"}, {"role": "assistant", "content": reply},
            {"role": "user", "content": "y?"}, {"role": "assistant", "content": reply}]
    ids, labels = _chat_example(tok, msgs, "<test>")
    trained = [t for t in labels if t != -100]
    want = [ord(c) for c in reply] + [2]
    assert trained == want + want  # each turn's reply and its end-of-turn token, nothing else
    assert len(ids) == len(labels)
    assert "".join(chr(t) if t != 1000 else "\n " for t in ids) == tok.apply_chat_template(msgs)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_full_disk_on_head_save_keeps_the_old_head(tiny_causal_path, tmp_path, monkeypatch):
    old, new = _fresh_head(tiny_causal_path, 1.0), _fresh_head(tiny_causal_path, 2.0)
    old.save_pretrained(tmp_path)

    def full(path, flags=os.O_WRONLY):  # the file appears, every write to it: ENOSPC
        Path(path).write_bytes(b"\0" * 10)
        return os.open("/dev/full", os.O_WRONLY)

    monkeypatch.setattr(io_utils, "open_fresh", full)
    with pytest.raises(WriteError, match="disk is full"):
        new.save_pretrained(tmp_path)
    monkeypatch.undo()
    assert not (tmp_path / (WEIGHTS_NAME + ".tmp")).exists()
    assert torch.equal(load_head_files(tmp_path)[1]["weight"], old.head.weight)
