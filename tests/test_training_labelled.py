"""train --labelled-file: the head learns from human labels (word tags, MQM, error spans)."""

import json
import random

import pytest
import torch

from sigmoid_head.data.prompt_format import PromptFormat
from sigmoid_head.data.self_labels import BAD, word_labels, words
from sigmoid_head.lm.backbone import load_backbone
from sigmoid_head.training.config import TrainConfig
from sigmoid_head.training.labelled import labelled_records, load_labelled_examples
from sigmoid_head.training.loop import train


def _swapped(pairs, seed):
    """Each target with about one word in three swapped for another pair's word; the
    swapped words (those the reference does not match) are the errors."""
    rng = random.Random(seed)
    vocab = sorted({w for p in pairs for w in p["target"].split()})
    out = []
    for p in pairs:
        mt = " ".join(w if rng.random() < 0.65 else rng.choice(vocab) for w in p["target"].split())
        out.append((p["source"], mt, word_labels(mt, [p["target"]])))
    return out


def _write_wmt(folder, name, rows):
    """A WMT word-tags file (one tag per whitespace word) with its .mt and .src beside."""
    folder.mkdir(parents=True, exist_ok=True)
    tags = []
    for _, mt, labels in rows:
        bad = [(a, b) for (_, a, b), lab in zip(words(mt), labels, strict=True) if lab == BAD]
        tags.append(
            " ".join(
                "BAD" if any(a < e and s < b for a, b in bad) else "OK" for s, e in _spaces(mt)
            )
        )
    for suffix, lines in (
        (".src", [r[0] for r in rows]),
        (".mt", [r[1] for r in rows]),
        (".tags", tags),
    ):
        (folder / f"{name}{suffix}").write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return folder / f"{name}.tags"


def _spaces(text):
    pos, out = 0, []
    for w in text.split():
        start = text.index(w, pos)
        out.append((start, start + len(w)))
        pos = start + len(w)
    return out


@pytest.fixture()
def labelled_files(pairs_maker, tmp_path):
    return (
        _write_wmt(tmp_path / "gold", "train", _swapped(pairs_maker(160, seed=5), 1)),
        _write_wmt(tmp_path / "gold", "dev", _swapped(pairs_maker(60, seed=6), 2)),
    )


def _ok_minus_bad(model, path):
    """Mean head probability of the OK tokens minus that of the BAD tokens of a gold file."""
    from sigmoid_head.data.batching import Collator, pad_id

    ex = load_labelled_examples(path, model.tokenizer, PromptFormat(model.backbone.is_encoder_decoder))
    collate = Collator(pad_id(model.tokenizer), model.backbone.is_encoder_decoder)
    batch = collate(ex)
    with torch.no_grad():
        pos = model.backbone.positions(batch, with_logits=False)
        probs = torch.sigmoid(model.head(pos.hidden, pos.targets.unsqueeze(1)).float().squeeze(1))
    good = torch.tensor([g for e in ex for g in e["good"]])
    assert good.numel() == probs.numel()
    return float(probs[good == 1].mean() - probs[good == 0].mean())


@torch.no_grad()
def _loss(*args):
    from sigmoid_head.training.step import head_loss

    return head_loss(*args)


@pytest.mark.parametrize("fixture", ["tiny_causal_path", "tiny_seq2seq_path"])
def test_bad_tokens_end_below_ok_tokens(
    fixture, request, train_config, train_history, labelled_files, tmp_path
):
    path = request.getfixturevalue(fixture)
    gold, dev = labelled_files
    config = train_config(
        path,
        None,
        tmp_path / "head",
        train_file=None,
        labelled_file=str(gold),
        labelled_validation_file=str(dev),
        max_steps=40,
        bad_weight=2.0,
    )
    before_backbone = {
        k: v.clone() for k, v in load_backbone(str(path), device="cpu").model.state_dict().items()
    }
    from sigmoid_head.head.model import SigmoidHeadModel

    untrained = SigmoidHeadModel.from_base(str(path), device="cpu")
    model = train(config)
    # before training the head cannot tell them apart; after, on held-out labelled data, it does
    assert abs(_ok_minus_bad(untrained, dev)) < 0.02
    assert _ok_minus_bad(model, dev) > 0.1
    hist = train_history(tmp_path / "head")
    assert hist[-1]["val_loss"] < 0.8 * hist[0]["val_loss"], hist
    after = model.backbone.model.state_dict()
    assert all(torch.equal(before_backbone[k], after[k]) for k in before_backbone), (
        "backbone changed"
    )
    assert not torch.equal(model.head.weight, untrained.head.weight)


def test_mixed_with_reference_data_and_its_weight(
    train_config, tiny_causal_path, tiny_pairs_jsonl, labelled_files, tmp_path
):
    """A mixed micro-batch's loss is reference_weight x its reference part + its labelled
    part; mixed training runs and the weight reaches it."""
    from sigmoid_head.data.batching import Collator, pad_id
    from sigmoid_head.data.tokenize import load_examples
    from sigmoid_head.head.model import SigmoidHeadModel
    from sigmoid_head.lm.dominant import DominantConfig
    from sigmoid_head.training.negatives import NegativeSampler, SamplerConfig
    from sigmoid_head.training.step import StepContext, _seeded, micro_loss

    gold, _ = labelled_files
    model = SigmoidHeadModel.from_base(str(tiny_causal_path), device="cpu")
    ref = load_examples(
        str(tiny_pairs_jsonl), model.tokenizer, is_encoder_decoder=False, task="pairs"
    )[:4]
    lab = load_labelled_examples(gold, model.tokenizer, PromptFormat(False))[:4]
    collate = Collator(pad_id(model.tokenizer), False)
    sampler = NegativeSampler(
        SamplerConfig(strategy="random", avoid_dominant=False), model.config.vocab_size
    )

    def loss(w):
        ctx = StepContext(
            model,
            model.head,
            sampler,
            DominantConfig(),
            torch.autocast("cpu", enabled=False),
            reference_weight=w,
        )
        with torch.no_grad():
            total, n = micro_loss(
                ctx,
                list(range(8)),
                ref + lab,
                collate,
                _seeded(0, 2, device=torch.device("cpu")),
                None,
            )
        return float(total), n

    (l1, n1), (l2, n2), (l5, n5) = loss(1.0), loss(2.0), loss(5.0)
    assert n1 == n2 == n5
    reference_part = l2 - l1
    assert reference_part > 0
    assert l5 - l1 == pytest.approx(4 * reference_part, rel=1e-4)
    kw = dict(max_steps=4, validation_fraction=0.0, eval_every=None)
    heads = [
        train(
            train_config(
                tiny_causal_path,
                tiny_pairs_jsonl,
                tmp_path / str(w),
                labelled_file=str(gold),
                reference_weight=w,
                **kw,
            )
        ).head.weight
        for w in (0.05, 5.0)
    ]
    assert not torch.equal(heads[0], heads[1])


def test_labelled_loss_is_the_paper_loss_when_every_token_is_good(tiny_causal_path):
    """With every label 1 and weight 1 the labelled loss is the paper's, negative for negative;
    a label 0 keeps only its token, as a negative, weighted."""
    from sigmoid_head.head.layer import sigmoid_bce
    from sigmoid_head.head.model import SigmoidHeadModel
    from sigmoid_head.lm.dominant import DominantConfig
    from sigmoid_head.training.negatives import NegativeSampler, SamplerConfig
    from sigmoid_head.training.step import StepContext, _seeded

    model = SigmoidHeadModel.from_base(str(tiny_causal_path), device="cpu")
    ctx = StepContext(
        model,
        model.head,
        NegativeSampler(
            SamplerConfig(strategy="random", avoid_dominant=False), model.config.vocab_size
        ),
        DominantConfig(),
        torch.autocast("cpu", enabled=False),
        bad_weight=3.0,
    )
    ids = model.tokenizer(["the cat sat on the mat", "a dog ran"], return_tensors=None)["input_ids"]
    from sigmoid_head.data.batching import Collator, pad_id

    batch = Collator(pad_id(model.tokenizer), False)([{"input_ids": i, "labels": i} for i in ids])
    with torch.no_grad():
        pos = model.backbone.positions(batch, with_logits=False)
    n = pos.targets.numel()
    paper, _ = _loss(ctx, pos, None, _seeded(0, 1, device=torch.device("cpu")))
    same, k = _loss(
        ctx,
        pos,
        None,
        _seeded(0, 1, device=torch.device("cpu")),
        (torch.ones(n, dtype=torch.long), torch.ones(n)),
    )
    assert k == n and float(same) == pytest.approx(float(paper), rel=1e-6)
    good = torch.ones(n, dtype=torch.long)
    good[0], good[1] = 0, -1
    weight = torch.tensor([3.0, 0.0] + [1.0] * (n - 2))
    mixed, k = _loss(ctx, pos, None, _seeded(0, 1, device=torch.device("cpu")), (good, weight))
    negatives = ctx.sampler(pos.targets, _seeded(0, 1, device=torch.device("cpu")), None, None)
    with torch.no_grad():
        per = sigmoid_bce(model.head, pos.hidden, pos.targets, negatives)  # (N,), the paper's
        logit = model.head(pos.hidden[:1], pos.targets[:1].unsqueeze(1)).float().squeeze()
    expected = 3.0 * float(torch.nn.functional.softplus(logit)) + float(per[2:].sum())
    assert k == n - 1
    assert float(mixed) == pytest.approx(expected, rel=1e-5)
    assert float(per.sum()) == pytest.approx(float(paper), rel=1e-6)


def test_labelled_settings_are_checked(tmp_path):
    out = str(tmp_path)
    with pytest.raises(ValueError, match="train_file .* or labelled_file"):
        TrainConfig(output_dir=out)
    with pytest.raises(ValueError, match="bad_weight must be > 0"):
        TrainConfig(labelled_file="g.tags", output_dir=out, bad_weight=0.0)
    with pytest.raises(ValueError, match="bad_weight .* needs labelled_file"):
        TrainConfig(train_file="t.jsonl", output_dir=out, bad_weight=2.0)
    with pytest.raises(ValueError, match="reference_weight must be > 0"):
        TrainConfig(
            train_file="t.jsonl", labelled_file="g.tags", output_dir=out, reference_weight=-1.0
        )
    with pytest.raises(ValueError, match="reference_weight .* needs both"):
        TrainConfig(labelled_file="g.tags", output_dir=out, reference_weight=0.5)
    with pytest.raises(ValueError, match="labelled_format must be one of"):
        TrainConfig(labelled_file="g.jsonl", labelled_format="ragtruth", output_dir=out)
    with pytest.raises(ValueError, match="need labelled_file"):
        TrainConfig(train_file="t.jsonl", labelled_validation_file="d.tags", output_dir=out)
    with pytest.raises(ValueError, match="memory"):
        TrainConfig(labelled_file="g.tags", data_engine="datasets", output_dir=out)
    with pytest.raises(ValueError, match="validation_file needs train_file"):
        TrainConfig(labelled_file="g.tags", validation_file="v.jsonl", output_dir=out)


def test_bad_gold_input_names_file_and_line(
    train_config, tiny_causal_path, labelled_files, tmp_path
):
    gold, _ = labelled_files
    lines = gold.read_text(encoding="utf-8").splitlines()
    lines[2] += " OK"  # one tag too many on line 3
    gold.write_text("\n".join(lines) + "\n", encoding="utf-8")
    config = train_config(
        tiny_causal_path, None, tmp_path / "h", train_file=None, labelled_file=str(gold)
    )
    with pytest.raises(ValueError, match=rf"{gold}:3: .* tags for .* MT words"):
        train(config)
    assert not (tmp_path / "h" / "head_config.json").exists()
    # a tags file without its sources beside it
    (gold.with_suffix(".src")).unlink()
    with pytest.raises(ValueError, match="needs the source sentences beside"):
        labelled_records(gold)
    spans = tmp_path / "spans.jsonl"
    spans.write_text(
        json.dumps({"src": "a", "tgt": "one two", "esa_spans": []})
        + "\n"
        + json.dumps({"tgt": "one two", "esa_spans": [{"start": 0, "end": 3}]})
        + "\n"
    )
    with pytest.raises(ValueError, match=rf"{spans}:2: no source text"):
        labelled_records(spans)
    spans.write_text(
        json.dumps({"src": "a", "tgt": "one", "esa_spans": [{"start": 0, "end": 9}]}) + "\n"
    )
    with pytest.raises(ValueError, match=rf"{spans}:1: .* not inside"):
        labelled_records(spans)


def test_google_mqm_rows_become_word_labels(tmp_path):
    header = "system\tdoc\tdoc_id\tseg_id\trater\tsource\ttarget\tcategory\tseverity\n"
    rows = [
        "sysA\td1\t1\t1\tr1\tA <v>cat</v> sat.\tThe <v>dog</v> sat down.\tAccuracy/Mistranslation\tMajor\n",
        "sysA\td1\t1\t1\tr2\tA cat sat.\tThe dog sat <v>down</v>.\tFluency/Grammar\tMinor\n",
        "sysA\td1\t1\t2\tr1\tIt ran.\tIt ran.\tNo-error\tNo-error\n",
    ]
    path = tmp_path / "mqm.tsv"
    path.write_text(header + "".join(rows), encoding="utf-8")
    got = labelled_records(path)
    assert [line for line, _ in got] == [2, 4]
    first = got[0][1]
    assert first["source"] == "A cat sat."  # the raters' marks are not part of the source
    assert first["target"] == "The dog sat down."
    assert first["word_labels"] == ["OK", "BAD", "OK", "BAD", "OK"]  # both raters' spans
    assert got[1][1]["word_labels"] == ["OK", "OK", "OK"]


def test_cli_trains_on_labels_alone(tiny_causal_path, labelled_files, tmp_path, capsys):
    from sigmoid_head.cli import main

    gold, dev = labelled_files
    out = tmp_path / "head"
    assert (
        main(
            [
                "train",
                "--labelled-file",
                str(gold),
                "--labelled-validation-file",
                str(dev),
                "--bad-weight",
                "2",
                "--model",
                str(tiny_causal_path),
                "--output-dir",
                str(out),
                "--max-steps",
                "3",
                "--no-progress",
                "--device",
                "cpu",
            ]
        )
        == 0
    )
    rec = json.loads((out / "head_config.json").read_text())["training"]
    assert (
        rec["labelled_file"] == str(gold) and rec["train_file"] is None and rec["bad_weight"] == 2.0
    )
    assert len(rec["history"]) >= 2
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    assert "--labelled-file" in capsys.readouterr().out


def test_labelled_training_is_the_same_with_either_cache(
    train_config, train_history, tiny_causal_path, labelled_files, tmp_path
):
    """No cache, the in-memory cache and the disk cache give the same validation history
    (the disk cache is sized by every trained position, labelled or not)."""
    gold, dev = labelled_files
    kw = dict(
        train_file=None,
        labelled_file=str(gold),
        labelled_validation_file=str(dev),
        max_steps=12,
        eval_every=4,
        negatives="token_freq",
    )
    runs = {
        "plain": {},
        "memory": {"cache_hidden": True},
        "disk": {
            "cache_hidden": True,
            "cache_dir": str(tmp_path / "hidden"),
            "disk_cache_dtype": "float32",
        },
    }
    for name, extra in runs.items():
        train(train_config(tiny_causal_path, None, tmp_path / name, **kw, **extra))
    plain = train_history(tmp_path / "plain")
    assert len(plain) == 4
    for name in ("memory", "disk"):
        other = train_history(tmp_path / name)
        for x, y in zip(plain, other, strict=True):
            assert x["val_loss"] == pytest.approx(y["val_loss"], rel=1e-4), name


def test_span_jsonl_items_become_labelled_examples(tiny_causal_path, tmp_path):
    """An MQM span JSONL (as build_labelled.py writes it, gzipped): the tokens inside a
    span are the negatives, the others positives."""
    import gzip

    from sigmoid_head.head.model import SigmoidHeadModel

    rows = [
        {
            "src": "le chat",
            "tgt": "the cat sat",
            "mqm_spans": [
                {
                    "start": 4,
                    "end": 7,
                    "severity": "major",
                    "category": "Accuracy/Mistranslation",
                    "rater": "r1",
                }
            ],
        },
        {"src": "un chien", "tgt": "a dog", "mqm_spans": []},
    ]
    path = tmp_path / "train.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write("".join(json.dumps(r) + "\n" for r in rows))
    assert [r["word_labels"] for _, r in labelled_records(path)] == [
        ["OK", "BAD", "OK"],
        ["OK", "OK"],
    ]
    tok = SigmoidHeadModel.from_base(str(tiny_causal_path), device="cpu").tokenizer
    ex = load_labelled_examples(path, tok, PromptFormat(False))
    first = [t for t in ex[0]["labels"][1:] if t != -100]
    spelled = [tok.decode([t]).strip() for t in first]
    bad = [s for s, g in zip(spelled, ex[0]["good"], strict=True) if g == 0]
    good = [s for s, g in zip(spelled, ex[0]["good"], strict=True) if g == 1]
    assert "".join(bad) == "cat" and "".join(good) == "thesat"
    assert 0 not in ex[1]["good"] and 1 in ex[1]["good"]


def test_items_left_without_a_labelled_token_are_counted_in_one_warning(
    tiny_causal_path, tmp_path, caplog
):
    """An item whose prompt fills max_length has no labelled token left: it is dropped,
    and one warning gives how many of how many and their lines (it was silent)."""
    import logging

    from sigmoid_head.head.model import SigmoidHeadModel

    long_source = " ".join(["word"] * 200)
    rows = [
        {"src": "le chat", "tgt": "the cat sat", "mqm_spans": []},
        {"src": long_source, "tgt": "a dog", "mqm_spans": []},
        {"src": "un chien", "tgt": "a dog", "mqm_spans": []},
        {"src": long_source + " again", "tgt": "the dog", "mqm_spans": []},
    ]
    path = tmp_path / "train.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    tok = SigmoidHeadModel.from_base(str(tiny_causal_path), device="cpu").tokenizer
    import warnings

    with caplog.at_level(logging.WARNING), warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        ex = load_labelled_examples(path, tok, PromptFormat(False, max_length=64))
    assert len(ex) == 2
    # one line, from the labelled-data logger, and no second copy as a Python warning (issue 61)
    msgs = [r for r in caplog.records if "labelled items dropped" in r.getMessage()]
    assert len(msgs) == 1 and msgs[0].name == "sigmoid_head.labelled_data"
    assert "2 of 4 labelled items dropped" in msgs[0].getMessage() and "(lines 2, 4)" in msgs[0].getMessage()
    assert "max_length=64" in msgs[0].getMessage() and "\n" not in msgs[0].getMessage()
    assert not [w for w in record if "labelled items dropped" in str(w.message)]
    # nothing dropped: no warning
    path.write_text("".join(json.dumps(r) + "\n" for r in rows[::2]), encoding="utf-8")
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert len(load_labelled_examples(path, tok, PromptFormat(False, max_length=64))) == 2
    assert not [r for r in caplog.records if "dropped" in r.getMessage()]
