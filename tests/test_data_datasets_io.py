"""Issue 16: training data through Hugging Face datasets, numpy batching, the disk cache."""

import json

import numpy as np
import pytest
import torch

from sigmoid_head.data.array_batching import make_batch_index
from sigmoid_head.data.tokenize import load_examples
from sigmoid_head.training.loop import train

pytest.importorskip("datasets")


from sigmoid_head.data.datasets_io import load_examples_arrow  # noqa: E402


@pytest.mark.parametrize("kw", [dict(batch_size=4), dict(max_tokens=60)])
@pytest.mark.parametrize("shuffle", [True, False])
def test_batch_index_covers_every_example_once_within_budget(kw, shuffle):
    rng = np.random.default_rng(0)
    lengths = rng.integers(3, 40, size=1003)
    idx = make_batch_index(lengths, shuffle=shuffle, seed=1, epoch=2, **kw)
    batches = list(idx)
    flat = sorted(i for b in batches for i in b)
    assert flat == list(range(len(lengths)))
    for b in batches:
        if "batch_size" in kw:
            assert 1 <= len(b) <= 4
        else:
            assert len(b) == 1 or len(b) * max(lengths[b]) <= 60
    if shuffle:  # bucketing: batches are far less ragged than random ones
        spread = np.mean([lengths[b].max() - lengths[b].min() for b in batches])
        assert spread < 5
        again = make_batch_index(lengths, shuffle=True, seed=1, epoch=2, **kw)
        assert list(again) == batches
        other = make_batch_index(lengths, shuffle=True, seed=1, epoch=3, **kw)
        assert list(other) != batches
    else:
        assert flat == [i for b in batches for i in b]


@pytest.mark.parametrize("streaming", [False, True])
def test_arrow_examples_equal_the_in_memory_ones(streaming, tiny_tokenizer, tiny_pairs_jsonl,
                                                 tiny_chat_jsonl, tiny_text_txt, tmp_path):
    kw = dict(is_encoder_decoder=False, max_length=40, prompt_template="Translate: {source}\n")
    for path in (tiny_pairs_jsonl, tiny_chat_jsonl, tiny_text_txt):
        ref = load_examples(path, tiny_tokenizer, **kw)
        arrow = load_examples_arrow(str(path), tiny_tokenizer, streaming=streaming,
                                    cache_dir=str(tmp_path / "c"), **kw)
        assert len(arrow) == len(ref)
        for i in (0, len(ref) // 2, len(ref) - 1):
            assert arrow[i]["input_ids"] == ref[i]["input_ids"]
            assert arrow[i]["labels"] == ref[i]["labels"]
        assert arrow.lengths.tolist() == [len(e["input_ids"]) for e in ref]
        assert arrow.n_trained.tolist() == [sum(t != -100 for t in e["labels"][1:]) for e in ref]
        counts = np.bincount([t for e in ref for t in e["labels"] if t >= 0],
                             minlength=len(tiny_tokenizer))
        np.testing.assert_array_equal(arrow.token_counts(len(tiny_tokenizer)), counts)


def test_parquet_file_and_worker_processes(tiny_tokenizer, tiny_pairs_jsonl, tmp_path):
    import datasets

    rows = [json.loads(line) for line in tiny_pairs_jsonl.read_text().splitlines()]
    parquet = tmp_path / "pairs.parquet"
    datasets.Dataset.from_list(rows).to_parquet(str(parquet))
    ref = load_examples(tiny_pairs_jsonl, tiny_tokenizer, is_encoder_decoder=False)
    arrow = load_examples_arrow(str(parquet), tiny_tokenizer, is_encoder_decoder=False,
                                num_proc=2, cache_dir=str(tmp_path / "c"))
    assert [arrow[i]["labels"] for i in range(len(arrow))] == [e["labels"] for e in ref]


def test_datasets_engine_trains_and_streaming_trains_the_same_head(train_config, train_history,
                                                                   tiny_causal_path,
                                                                   tiny_pairs_jsonl, tmp_path):
    kw = dict(epochs=2, eval_every=5)
    a = train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path / "ds",
                           data_engine="datasets", **kw))
    b = train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path / "st",
                           data_engine="streaming", **kw))
    hist = train_history(tmp_path / "ds")
    assert hist[-1]["val_loss"] < hist[0]["val_loss"]
    assert (tmp_path / "ds" / "data_cache").is_dir()
    torch.testing.assert_close(a.head.weight, b.head.weight)
    assert train_history(tmp_path / "st") == hist


