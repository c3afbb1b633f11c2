"""Fast checks of ``recipes/bible/train_mt.py`` on a tiny slice of ``src/sigmoid_head/bible_sample``.

A ~500-piece tokenizer and a d_model 32, 1+1 layer Marian model trained for a
handful of steps: tokenizer conventions, the loss falling on a fixed batch, exact
resume from a checkpoint, the exported Hugging Face model and eval.json.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from recipes.bible import mt_eval
from recipes.bible import train_mt as mt

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "src" / "sigmoid_head" / "bible_sample"


def _slice(split: str, n: int) -> list[dict]:
    with gzip.open(SAMPLE / f"mt_{split}.jsonl.gz", "rt", encoding="utf-8") as f:
        return [json.loads(line) for _, line in zip(range(n), f, strict=False)]


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny models run fastest on one thread, and it spares a busy machine's other core."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """200 train pairs (gzipped, as in the sample) and 20 dev/test pairs (plain JSONL)."""
    folder = tmp_path_factory.mktemp("mt_data")
    with gzip.open(folder / "mt_train.jsonl.gz", "wt", encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in _slice("train", 200))
    for split in ("dev", "test"):
        lines = [json.dumps(r, ensure_ascii=False) + "\n" for r in _slice(split, 20)]
        (folder / f"mt_{split}.jsonl").write_text("".join(lines), encoding="utf-8")
    return folder


def _config(data_dir: Path, out: Path, **overrides) -> mt.MTConfig:
    tiny = dict(vocab_size=500, d_model=32, layers=1, heads=2, ffn_dim=64, batch_tokens=512)
    tiny |= dict(warmup_steps=2, lr=3e-3, eval_limit=6, eval_dev=False, checkpoint_minutes=60)
    return mt.MTConfig(data=str(data_dir), out=str(out), **(tiny | overrides))


@pytest.fixture(scope="module")
def tokenizer(data_dir: Path):
    train = mt.read_pairs(data_dir, "train")
    sources, targets = mt.group_references(train)
    return mt.train_tokenizer(sources + [t for group in targets for t in group], 500)


def test_read_pairs_gz_and_plain(data_dir: Path) -> None:
    assert len(mt.read_pairs(data_dir, "train")) == 200  # .jsonl.gz
    test = mt.read_pairs(data_dir, "test")  # .jsonl
    sources, refs = mt.group_references(test)
    assert len(sources) == 10 and all(len(r) == 2 for r in refs)  # KJV + WEB per source


def test_tokenizer_appends_eos_to_source_and_target(tokenizer, data_dir: Path) -> None:
    pair = mt.read_pairs(data_dir, "train")[0]
    eos = tokenizer.eos_token_id
    assert [tokenizer.convert_ids_to_tokens(i) for i in range(4)] == mt.SPECIAL_TOKENS
    src = tokenizer(pair["source"])["input_ids"]
    tgt = tokenizer(text_target=pair["target"])["input_ids"]
    assert src[-1] == eos and tgt[-1] == eos and eos not in src[:-1] + tgt[:-1]
    assert tokenizer(pair["source"], add_special_tokens=False)["input_ids"] == src[:-1]
    assert tokenizer.decode(tgt, skip_special_tokens=True) == pair["target"]
    assert tokenizer.decode(src, skip_special_tokens=True) == pair["source"]


def test_loss_falls_on_fixed_batch(tokenizer, data_dir: Path, tmp_path: Path) -> None:
    cfg = _config(data_dir, tmp_path, dropout=0.0)
    model = mt.build_model(cfg, tokenizer)
    examples, _ = mt.tokenize_records(
        mt.read_pairs(data_dir, "train")[:8], tokenizer, is_encoder_decoder=True
    )
    batch = mt.Collator(tokenizer.pad_token_id, is_encoder_decoder=True)(examples)
    optimizer = mt.make_optimizer(cfg, model)
    losses = [mt.train_step(model, batch, optimizer, cfg.lr, cfg)[0] for _ in range(30)]
    assert losses[-1] < 0.7 * losses[0]


def test_resume_continues_exactly(data_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("sacrebleu", reason="needs the eval extra (sacrebleu)")  # BLEU and chrF
    straight = mt.run(_config(data_dir, tmp_path / "straight", max_steps=6))
    assert straight["training"]["steps"] == 6
    cfg = _config(data_dir, tmp_path / "resumed", max_steps=6)
    assert mt.run(replace(cfg, stop_after_steps=3)) == {}  # an interrupted run
    saved = torch.load(tmp_path / "resumed" / "checkpoint" / "state.pt", weights_only=True)
    assert saved["state"]["step"] == 3
    resumed = mt.run(cfg)
    assert resumed["training"]["steps"] == 6
    assert resumed["training"]["target_tokens"] == straight["training"]["target_tokens"]
    a = torch.load(tmp_path / "straight" / "checkpoint" / "state.pt", weights_only=True)
    b = torch.load(tmp_path / "resumed" / "checkpoint" / "state.pt", weights_only=True)
    assert (a["state"]["epoch"], a["state"]["batch_index"]) == (
        b["state"]["epoch"],
        b["state"]["batch_index"],
    )
    for name, value in a["model"].items():
        torch.testing.assert_close(b["model"][name], value, rtol=1e-5, atol=1e-6)
    # bit for bit: an interrupted and resumed run exports the very weights of a straight one
    assert resumed["fingerprint"]["weights_sha256"] == straight["fingerprint"]["weights_sha256"]


def test_export_reloads_and_eval_json(data_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("sacrebleu", reason="needs the eval extra (sacrebleu)")  # BLEU and chrF
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    report = mt.run(_config(data_dir, tmp_path, max_steps=3, beams=2, eval_dev=True))
    saved = json.loads((tmp_path / "eval.json").read_text())
    assert saved == report
    assert {"bleu", "chrf"} <= saved.keys() and {"bleu", "chrf"} <= saved["test"]["greedy"].keys()
    assert saved["test"]["sources"] == 6 and saved["test"]["references"] == 12
    assert "beam2" in saved["test"] and "chrf" in saved["dev"]["greedy"]  # dev fits the budget
    hyps = [json.loads(x) for x in (tmp_path / "test_hyps.jsonl").read_text().splitlines()]
    assert len(hyps) == 6 and len(hyps[0]["references"]) == 2
    assert hyps[0]["target"] == hyps[0]["hypothesis"]
    # what a rebuild must match: the weights' hash is the exported file's, the data's the input's
    import hashlib

    fp = saved["fingerprint"]
    assert fp["weights_sha256"] == hashlib.sha256((tmp_path / "model" / "model.safetensors").read_bytes()).hexdigest()
    assert fp["train_data_sha256"] == hashlib.sha256((data_dir / "mt_train.jsonl.gz").read_bytes()).hexdigest()
    assert fp["threads"] == 1 and fp["versions"]["torch"] == torch.__version__ and fp["cpu"]

    model = AutoModelForSeq2SeqLM.from_pretrained(tmp_path / "model")
    tok = AutoTokenizer.from_pretrained(tmp_path / "model")
    assert model.config.decoder_start_token_id == tok.pad_token_id
    assert model.lm_head.weight.data_ptr() == model.get_input_embeddings().weight.data_ptr()
    assert tok(text_target="In the beginning")["input_ids"][-1] == tok.eos_token_id
    enc = tok(["En el principio"], return_tensors="pt")
    out = model.generate(**enc, max_new_tokens=5, num_beams=1)  # (1, T)
    assert out.shape[0] == 1 and out[0, 0].item() == tok.pad_token_id

    # the stand-alone evaluation script on the exported model
    again = mt_eval.main(
        ["--model", str(tmp_path / "model"), "--data", str(data_dir), "--out", str(tmp_path / "re")]
        + ["--splits", "test", "dev", "--limit", "3"]
    )
    assert again["test"]["sources"] == 3 and "bleu" in again["dev"]["greedy"]
    assert (tmp_path / "re" / "eval.json").is_file() and (
        tmp_path / "re" / "dev_hyps.jsonl"
    ).is_file()


def test_stop_request_leaves_a_resumable_checkpoint(data_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("sacrebleu", reason="needs the eval extra (sacrebleu)")  # BLEU and chrF
    mt.STOP.set()  # what Ctrl-C / SIGTERM do in the command line tool
    try:
        assert mt.run(_config(data_dir, tmp_path, max_steps=6)) == {}
    finally:
        mt.STOP.clear()
    saved = torch.load(tmp_path / "checkpoint" / "state.pt", weights_only=True)
    assert saved["state"]["step"] == 0 and not (tmp_path / "model").exists()
    assert mt.run(_config(data_dir, tmp_path, max_steps=6))["training"]["steps"] == 6
    with pytest.raises(SystemExit, match="max_steps"):  # another step count is another schedule
        mt.run(_config(data_dir, tmp_path, max_steps=8))


def test_a_time_budget_stops_early_says_so_and_resumes_to_the_fixed_step(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    pytest.importorskip("sacrebleu", reason="needs the eval extra (sacrebleu)")  # BLEU and chrF
    straight = mt.run(_config(data_dir, tmp_path / "straight", max_steps=4))
    assert straight["training"]["complete"] and straight["training"]["steps"] == 4
    cfg = _config(data_dir, tmp_path / "budget", max_steps=4)
    early = mt.run(replace(cfg, minutes=1e-6, eval_minutes=0.0))  # no time to train at all
    said = capsys.readouterr().out
    assert early["training"]["steps"] == 0 and early["training"]["complete"] is False
    assert "STOPPED EARLY at step 0 of 4" in said and "rerun the same command without --minutes" in said
    assert early["training"]["stopped_early"] in said
    resumed = mt.run(cfg)  # no budget: on to the fixed step, the same model as straight
    assert resumed["training"]["complete"] and resumed["training"]["steps"] == 4
    a = torch.load(tmp_path / "straight" / "checkpoint" / "state.pt", weights_only=True)
    b = torch.load(tmp_path / "budget" / "checkpoint" / "state.pt", weights_only=True)
    for name, value in a["model"].items():
        torch.testing.assert_close(b["model"][name], value, rtol=1e-5, atol=1e-6)


def test_the_schedule_depends_on_steps_not_time() -> None:
    cfg = mt.MTConfig(max_steps=100, warmup_steps=10)
    state = mt.TrainState(step=50)
    assert mt.schedule_progress(cfg, state) == 0.5
    assert mt.learning_rate(cfg, 50, 0.5) == pytest.approx(cfg.lr * 0.5)
    assert mt.MTConfig().minutes is None and mt.MTConfig().max_steps == 3708


def test_quick_flags_yield_to_explicit_ones() -> None:
    cfg = mt.parse_args(["--quick", "--minutes", "5", "--no-eval-dev", "--max-steps", "7"])
    assert (cfg.minutes, cfg.eval_limit, cfg.eval_dev, cfg.max_steps) == (5.0, 100, False, 7)
    assert mt.parse_args([]) == mt.MTConfig()
