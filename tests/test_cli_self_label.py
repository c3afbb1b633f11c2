"""sigmoid-head self-label: decode, tag against every reference, feed train --self-generated."""

import json

from sigmoid_head.cli import main
from sigmoid_head.data.self_labels import word_labels, words
from sigmoid_head.training.self_generated import group_references


def _pairs(path, pairs_maker):
    # two references per source, as in the Bible MT data
    rows = []
    for p in pairs_maker(12, seed=3):
        rows += [p, {"source": p["source"], "target": p["target"].replace("the", "a") + " too"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_self_label_decodes_tags_and_trains(tiny_seq2seq_path, pairs_maker, tmp_path, capsys):
    data = _pairs(tmp_path / "pairs.jsonl", pairs_maker)
    sources = group_references(json.loads(line) for line in data.read_text().splitlines())
    n = len(sources)  # the 10th pair repeats a source: 11 sources, one with three references
    assert n == 11 and all(len(s["references"]) >= 2 for s in sources)
    outs = {}
    for refs in (1, 2):
        out = tmp_path / f"self_{refs}.jsonl"
        assert main(["self-label", "--train-file", str(data), "-o", str(out), "--model",
                     str(tiny_seq2seq_path), "--samples", "2", "--max-new-tokens", "12",
                     "--max-refs", str(refs), "--device", "cpu"]) == 0
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        assert len(rows) == n * 3
        assert [r["origin"] for r in rows[:3]] == ["greedy", "sample", "sample"]
        for r, src in zip(rows, [s for s in sources for _ in range(3)], strict=True):
            assert r["source"] == src["source"] and r["references"] == src["references"][:refs]
            assert len(r["word_labels"]) == len(words(r["target"]))
            assert r["word_labels"] == word_labels(r["target"], r["references"])
        outs[refs] = rows
    # the same outputs (same seed), labelled against more references: never fewer OK words
    for one, two in zip(outs[1], outs[2], strict=True):
        assert one["target"] == two["target"]
        assert all(b == "OK" for a, b in zip(one["word_labels"], two["word_labels"], strict=True)
                   if a == "OK")
    assert "outputs of 11 sources labelled" in capsys.readouterr().out
    head = tmp_path / "head"
    assert main(["train", "--train-file", str(data), "--model", str(tiny_seq2seq_path),
                 "--output-dir", str(head), "--max-steps", "2", "--no-progress", "--device", "cpu",
                 "--self-generated", str(tmp_path / "self_2.jsonl")]) == 0
    assert "val_self" in json.loads((head / "head_config.json").read_text())["training"]["history"][0]


def test_self_label_refuses_to_overwrite_its_input(tiny_seq2seq_path, pairs_maker, tmp_path, capsys):
    data = _pairs(tmp_path / "pairs.jsonl", pairs_maker)
    before = data.read_bytes()
    assert main(["self-label", "--train-file", str(data), "-o", str(data), "--model",
                 str(tiny_seq2seq_path), "--device", "cpu"]) == 2
    assert data.read_bytes() == before
    assert "--output" in capsys.readouterr().err
