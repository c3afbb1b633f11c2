"""The Bible experiment recipe: candidates, one-pass scoring of every method, tables."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from recipes.bible import experiments, qe_report
from sigmoid_head.head.model import SigmoidHeadModel
from sigmoid_head.lm.backbone import load_backbone
from sigmoid_head.scoring.force_decode import score_records

TEST = [
    {"source": "el perro come el pan", "refs": ["the dog eats the bread", "the hound eats bread"]},
    {"source": "la casa grande", "refs": ["the big house", "the large house"]},
    {"source": "una mujer lee", "refs": ["a woman reads", "a woman is reading"]},
]


def test_other_candidates_labels_and_swaps() -> None:
    cands = experiments.other_candidates(TEST, seed=0)
    refs = [c for c in cands if c["kind"] == "reference"]
    assert [c["candidate"] for c in refs] == [r for t in TEST for r in t["refs"]]
    assert all(c["label"] == 1 for c in refs)
    nxt = [c for c in cands if c["kind"] == "next verse"]
    assert [c["candidate"] for c in nxt] == [TEST[1]["refs"][0], TEST[2]["refs"][0], TEST[0]["refs"][0]]
    for c in cands:
        if c["kind"] == "word swap":
            assert c["label"] == 0
            ref = next(t["refs"][0] for t in TEST if t["source"] == c["source"])
            diff = [(a, b) for a, b in zip(ref.split(), c["candidate"].split(), strict=True) if a != b]
            assert len(diff) == 1  # exactly one word replaced


@pytest.fixture(scope="module")
def scored(tiny_causal_path):
    backbone = load_backbone(str(tiny_causal_path), device="cpu")
    model = SigmoidHeadModel.from_base(backbone)
    with torch.no_grad():
        model.head.weight.add_(0.2 * torch.randn(model.head.weight.shape, generator=torch.Generator().manual_seed(3)))
    records = experiments.other_candidates(TEST, seed=0)
    render = {"prompt_template": "{source}\n", "use_chat_template": False}
    seq, details = experiments.score_all(backbone, {"x": model}, records, render, batch=2)
    ref = score_records(model, records, progress=False, batch_size=3, **render)
    return seq, details, ref


def test_score_all_matches_score_records(scored) -> None:
    seq, details, ref = scored
    for ours, theirs in (("softmax", "softmax_logprob"), ("sigmoid:x", "sigmoid_logprob"),
                         ("softmax@mean", "softmax_mean_log"), ("sigmoid:x@mean", "sigmoid_mean_log"),
                         ("entropy", "entropy_mean"), ("length", "n_tokens")):
        np.testing.assert_allclose(seq[ours], [r[theirs] for r in ref], rtol=1e-4, atol=1e-4, err_msg=ours)
    assert [len(d["ids"]) for d in details] == [r["n_tokens"] for r in ref]


def test_score_all_adds_rauq_rows_and_changes_no_other(tiny_causal_path, scored, tmp_path) -> None:
    pytest.importorskip("matplotlib", reason="needs the plots extra (matplotlib)")  # its report draws figures
    seq, _, ref = scored
    backbone = load_backbone(str(tiny_causal_path), device="cpu")
    records = experiments.other_candidates(TEST, seed=0)
    render = {"prompt_template": "{source}\n", "use_chat_template": False}
    rauq = experiments.RauqConfig(alpha=0.5)
    with_rauq, details = experiments.score_all(backbone, {}, records, render, batch=2, rauq=rauq)
    mine = score_records(backbone, records, progress=False, rauq=rauq, **render)
    np.testing.assert_allclose(with_rauq["rauq"], [r["rauq_logprob"] for r in mine], rtol=1e-5)
    np.testing.assert_allclose(with_rauq["rauq@mean"], [r["rauq_mean_log"] for r in mine], rtol=1e-5)
    assert len(details[0]["rauq"]) == len(details[0]["ids"])
    for k in ("softmax", "softmax@mean", "boostedprob", "entropy", "length"):
        np.testing.assert_allclose(with_rauq[k], seq[k], rtol=1e-5, atol=1e-6, err_msg=k)
    labels = np.array([c["label"] for c in records], dtype=float)
    gold = {"chrf": np.exp(seq["softmax@mean"]), "minilm": -seq["length"]}
    meta = {"setting": "llm", "model": "tiny", "n_train": 1, "n_test": 3, "quick": True}
    qe_report.write_tables(tmp_path, meta, with_rauq, labels, dict(with_rauq), gold, "x")
    blocks = (tmp_path / "results.md").read_text().split("**Eval ")[1:]
    assert all("| rauq |" in b for b in blocks[:2]) and all("| rauq@mean |" in b for b in blocks[2:])


def test_tables_split_products_and_length_normalised(tmp_path, scored) -> None:
    pytest.importorskip("matplotlib", reason="needs the plots extra (matplotlib)")  # its report draws figures
    seq, _, _ = scored
    labels = np.array([c["label"] for c in experiments.other_candidates(TEST, seed=0)], dtype=float)
    gold = {"chrf": np.exp(seq["softmax@mean"]), "minilm": -seq["length"]}  # a perfect and a length gold
    meta = {"setting": "llm", "model": "tiny", "n_train": 1, "n_test": 3, "quick": True}
    qe_report.write_tables(tmp_path, meta, seq, labels, dict(seq), gold, "x")
    text = (tmp_path / "results.md").read_text()
    blocks = text.split("**Eval ")[1:]
    assert len(blocks) == 4
    products, normalised = blocks[:2], blocks[2:]
    for b in products:
        assert "| softmax |" in b and "| sigmoid:x |" in b and "@mean" not in b and "| length |" not in b
    for b in normalised:
        assert "| softmax@mean |" in b and "| length |" in b and "| entropy |" in b and "| softmax |" not in b
    # the gold that IS softmax@mean gives Pearson 1, in bold; the length gold is tracked by "length"
    self_norm = normalised[1]
    assert "| softmax@mean | **1.000 [1.000, 1.000]** |" in self_norm
    assert "| length | " in self_norm and self_norm.split("| length | ")[1].split(" | ")[1].startswith("**1.000")
    # BCE is not defined for an uncertainty or a length
    assert "| length | " in normalised[0] and " – |" in normalised[0].split("| length |")[1].split("\n")[0]


def test_by_kind_table_separates_negative_kinds() -> None:
    cands = experiments.other_candidates(TEST, seed=0)
    kinds = [c["kind"] for c in cands]
    assert set(kinds) == {"reference", "next verse", "word swap"}
    # a score that puts every next verse below every reference, every word swap above them
    score = {"reference": 0.5, "next verse": 0.1, "word swap": 0.9}
    table = qe_report.by_kind_table({"m": [score[k] for k in kinds], "length": [0.0] * len(kinds)}, cands)
    n_swap = kinds.count("word swap")
    assert f"ROC-AUC of 6 references against 3 next verse, {n_swap} word swap" in table
    row = next(line for line in table.splitlines() if line.startswith("| m |"))
    assert row.split(" | ")[1].startswith("**1.000") and row.split(" | ")[2].startswith("**0.000")
    assert "| length |" not in table  # a length is not a quality score
    with pytest.raises(SystemExit, match="2 scores but"):
        qe_report.by_kind_table({"m": [0.0, 1.0]}, cands)


def test_token_page_is_the_library_page(tiny_causal_path, scored, tmp_path) -> None:
    """qe_report.write_html draws the page of `sigmoid-head score --html` from score_all's
    per-token log-probabilities: the same token colours as the library's own rows."""
    from sigmoid_head.evaluation.html import colour

    _, details, ref = scored
    backbone = load_backbone(str(tiny_causal_path), device="cpu")
    cands = experiments.other_candidates(TEST, seed=0)
    page = tmp_path / "tokens.html"
    qe_report.write_html(page, backbone.tokenizer, cands, details, "x", n=2)
    text = page.read_text(encoding="utf-8")
    assert text.count('class="item"') == 2
    special = set(backbone.tokenizer.all_special_ids)  # EOS adds no text: not drawn
    for d in details[:2]:
        for i, lp in zip(d["ids"], d["sigmoid:x"], strict=True):
            if i not in special:
                assert f"background:{colour(float(np.exp(lp)))}" in text
