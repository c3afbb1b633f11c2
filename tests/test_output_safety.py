"""Issue 26: no output file is written through a link planted by someone else (item 4)."""

from __future__ import annotations

import json

import pytest

from sigmoid_head.safe.files import LOCK_NAME, DirectoryLock, write_atomic
from sigmoid_head.safe.resumable_jsonl import ResumableJsonlWriter


@pytest.fixture
def victim(tmp_path):
    v = tmp_path / "victim.txt"
    v.write_text("precious\n")
    return v


def test_write_atomic_does_not_follow_a_planted_tmp_link(tmp_path, victim):
    out = tmp_path / "out" / "calibration.json"
    out.parent.mkdir()
    (out.parent / "calibration.json.tmp").symlink_to(victim)
    write_atomic(out, "{}\n")
    assert victim.read_text() == "precious\n"
    assert out.read_text() == "{}\n" and not out.is_symlink()


def test_directory_lock_does_not_truncate_a_planted_lock_link(tmp_path, victim):
    d = tmp_path / "run"
    d.mkdir()
    (d / LOCK_NAME).symlink_to(victim)
    with DirectoryLock(d, "train"):
        pass
    assert victim.read_text() == "precious\n"


@pytest.mark.parametrize("planted", [".partial.meta", ".partial"])
def test_resumable_writer_does_not_follow_planted_links(tmp_path, victim, planted):
    out = tmp_path / "o.jsonl"
    (tmp_path / ("o.jsonl" + planted)).symlink_to(victim)
    with ResumableJsonlWriter(out, key="k", total=2) as w:
        w.write_many([{"i": 0}, {"i": 1}])
    assert victim.read_text() == "precious\n"
    assert [json.loads(x)["i"] for x in out.read_text().splitlines()] == [0, 1]


# Item 1: an output path that is an input, the other output, or inside the head or
# model folder is refused before any work (exit 2, one line), links and relative forms
# resolved first.


def _cli(*argv):
    from sigmoid_head.cli import main

    return main([str(a) for a in argv])


@pytest.fixture
def head_dir(tmp_path):
    h = tmp_path / "H1"
    h.mkdir()
    (h / "head_config.json").write_text('{"precious": 1}\n')
    return h


def _rows(path, n=2):
    path.write_text("".join(json.dumps({"source": "a", "candidate": "b"}) + "\n" for _ in range(n)))
    return path


@pytest.mark.parametrize("case", ["input", "relative", "link", "html_is_input",
                                  "html_is_to_json", "head_config", "model_folder"])
def test_score_refuses_an_output_that_destroys_an_input(tmp_path, head_dir, monkeypatch,
                                                        capsys, case, tiny_causal_path):
    monkeypatch.chdir(tmp_path)
    inp = _rows(tmp_path / "in.jsonl")
    before = inp.read_bytes()
    (tmp_path / "ln.jsonl").symlink_to(inp)
    out = {"input": ["--to-json", inp], "relative": ["--to-json", "./sub/../in.jsonl"],
           "link": ["--to-json", "ln.jsonl"], "html_is_input": ["--html", "in.jsonl"],
           "html_is_to_json": ["--to-json", "o.jsonl", "--html", "./o.jsonl"],
           "head_config": ["--head", "./H1/", "--to-json", "H1/head_config.json"],
           "model_folder": ["--to-json", tiny_causal_path / "scores.jsonl"]}[case]
    (tmp_path / "sub").mkdir()
    code = _cli("score", "--input", "in.jsonl", "--model", tiny_causal_path, "--quiet", *out)
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "same file" in err or "inside" in err
    assert inp.read_bytes() == before
    assert (head_dir / "head_config.json").read_text() == '{"precious": 1}\n'


def test_calibrate_refuses_scores_that_it_would_overwrite(head_dir, capsys):
    scores = _rows(head_dir / "combination.json")
    before = scores.read_bytes()
    code = _cli("calibrate", "--head", head_dir, "--scores", scores, "--quality", scores)
    assert code == 2 and "same file" in capsys.readouterr().err
    assert scores.read_bytes() == before


def test_train_refuses_an_output_dir_that_holds_its_training_file(tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    data = _rows(out / "head_config.json", 4)
    before = data.read_bytes()
    code = _cli("train", "--train-file", data, "--output-dir", out)
    assert code == 2 and "same file" in capsys.readouterr().err
    assert data.read_bytes() == before


# Item 2: one lock per output file.


def test_two_writers_on_one_output_file_are_refused(tmp_path):
    from sigmoid_head.safe.files import LockedError

    out = tmp_path / "o.jsonl"
    with ResumableJsonlWriter(out, key="k", total=2) as w:
        w.write_many([{"i": 0}])
        with pytest.raises(LockedError, match="o.jsonl is in use"):
            ResumableJsonlWriter(out, key="k", total=2)
        w.write_many([{"i": 1}])
    assert [json.loads(x)["i"] for x in out.read_text().splitlines()] == [0, 1]
    with ResumableJsonlWriter(out, key="k2", total=1) as w:  # released after close
        w.write_many([{"i": 2}])
    assert out.read_text().count("\n") == 1


def test_a_refused_resume_releases_the_lock(tmp_path):
    out = tmp_path / "o.jsonl"
    w = ResumableJsonlWriter(out, key="k", total=2)
    w.write_many([{"i": 0}])
    w.close()
    with pytest.raises(ValueError, match="another run"):
        ResumableJsonlWriter(out, key="other", total=2)
    ResumableJsonlWriter(out, key="k", total=2).close()  # not locked by the refused one


# Item 7: terminal and page safety.


def test_stream_shows_the_models_control_characters_visibly():
    import io
    from types import SimpleNamespace

    from sigmoid_head.terminal import show_stream

    out = io.StringIO()
    events = [SimpleNamespace(text="a\x1b[2J\x07b\u202ec", scores={"sigmoid": 0.5}),
              SimpleNamespace(record={})]
    list(show_stream(events, "sigmoid", out))
    text = out.getvalue()
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert text == "a\\x1b[2J\\x07b\\u202ec\n"


def test_page_isolates_bidi_overrides():
    from sigmoid_head.evaluation.html import render_page

    row = {"source": "src \u202e evil", "candidate": "x",
           "tokens": [{"token": "t", "sigmoid": 0.5}, {"token": "u", "sigmoid": 0.5}]}
    page = render_page([row], [["a\u202eb", "c"]], title="t")
    assert "<bdi>a\u202eb</bdi>" in page and "<bdi>src \u202e evil</bdi>" in page


def test_model_card_escapes_config_strings():
    from sigmoid_head.head.folder import HeadConfig
    from sigmoid_head.head.model_card import model_card

    config = HeadConfig(base_model="org/m\n## Injected\n<script>x</script>", vocab_size=10,
                        hidden_size=4, fingerprint="x",
                        training={"train_file": "<img src=y>.jsonl"})
    text = model_card(config)
    assert "\n## Injected" not in text
    assert "<script>" not in text and "<img" not in text
    heading = [ln for ln in text.splitlines() if ln.startswith("# Sigmoid Head for")]
    assert heading == ["# Sigmoid Head for org/m\\x0a## Injected\\x0a&lt;script&gt;x&lt;/script&gt;"]


# Item 3: resume keyed on content.


def _interrupted(head, inputs):
    """Open and kill a corpus run's writer; the resume key is what score_corpus builds."""
    from types import SimpleNamespace

    from sigmoid_head.scoring.corpus import CorpusConfig, _settings
    from sigmoid_head.scoring.corpus_output import _writer

    model = SimpleNamespace(source=head)  # where the head was loaded from, as given
    w = _writer("o.jsonl", inputs, 3, _settings(model, CorpusConfig()))
    done = w.done
    w.write_many([{"i": done}])
    w.__exit__(KeyboardInterrupt, None, None)  # a killed run: the partial file stays
    return done


def test_resume_key_follows_the_heads_content_not_its_spelling(tmp_path, head_dir,
                                                               monkeypatch):
    from types import SimpleNamespace

    import sigmoid_head.scoring.token_scores as token_scores

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(token_scores, "unpack_model",  # no model needed for the key
                        lambda model: (SimpleNamespace(name_or_path="m", dtype="float32"), None))
    (head_dir / "head.safetensors").write_bytes(b"weights-1")
    inputs = [{"source": "a", "candidate": "b"}] * 3

    assert _interrupted("./H1/", inputs) == 0
    assert _interrupted("H1", inputs) == 1  # the same run
    (head_dir / "calibration.json").write_text("{}\n")  # calibrate ran in between
    with pytest.raises(ValueError, match="another run"):
        _interrupted("H1", inputs)


# Item 6: one overlong record does not stop a long run.


def test_an_overlong_prompt_is_cut_from_the_left_with_a_warning(tiny_tokenizer):
    from sigmoid_head.data.prompts import make_examples

    recs = [{"source": "the cat sat " * 400 + "END", "candidate": "a dog ran"},
            {"source": "short", "candidate": "a dog ran"}]
    with pytest.warns(UserWarning, match="record 1: the prompt was cut from the left"):
        ex = make_examples(recs, tiny_tokenizer, is_encoder_decoder=False, max_length=32)
    assert len(ex) == 2 and ex[0].get("truncated") and not ex[1].get("truncated")
    assert len(ex[0]["input_ids"]) <= 32
    assert [t for t in ex[0]["labels"] if t != -100] == [t for t in ex[1]["labels"] if t != -100]


@pytest.mark.parametrize("command", ["score", "generate"])
def test_a_cut_record_is_named_by_file_and_line(command, tiny_causal_path, tmp_path,
                                                monkeypatch):
    """Issue 26, item 6: the warning for a cut record names the input's file:line (not its
    place in a batch), in score and in generate, and its row is flagged, the run goes on."""
    import json
    from pathlib import Path

    from sigmoid_head.cli import main as cli_main

    monkeypatch.chdir(tmp_path)
    long = "the cat sat " * 900 + "END"  # about 3,600 tokens: over the 2,048 of max_length
    if command == "score":
        recs = [{"source": "a", "candidate": "b"}] * 2 + [{"source": long, "candidate": "a dog"}]
        Path("in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
        argv, where = ["--input", "in.jsonl"], "in.jsonl:3"
    else:
        Path("src.txt").write_text(f"a\n{long}\nb\n")
        argv, where = ["-s", "src.txt", "--max-new-tokens", "2"], "src.txt:2"
    with pytest.warns(UserWarning, match=f"^{where}: the prompt .*cut"):
        code = cli_main([command, "--quiet", "--model", str(tiny_causal_path), "--device", "cpu",
                         "--batch-size", "2", *argv, "--to-json", "o.jsonl"])
    assert code == 0
    rows = [json.loads(x) for x in Path("o.jsonl").read_text().splitlines()]
    assert [bool(r.get("truncated")) for r in rows] == [False, False, True][:len(rows)] \
        if command == "score" else [False, True, False]
