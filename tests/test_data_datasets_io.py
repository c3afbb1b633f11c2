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




@pytest.mark.parametrize("enc_dec", [False, True])
def test_views_keep_a_few_bytes_per_example_and_read_the_same_examples(enc_dec, tiny_tokenizer,
                                                                       tiny_pairs_jsonl,
                                                                       tmp_path):
    from sigmoid_head.data.datasets_io import split_validation

    kw = dict(is_encoder_decoder=enc_dec, max_length=40, prompt_template="{source}\n")
    ref = load_examples(tiny_pairs_jsonl, tiny_tokenizer, **kw)
    full = load_examples_arrow(str(tiny_pairs_jsonl), tiny_tokenizer, cache_dir=str(tmp_path), **kw)
    assert full.lengths.dtype == full.n_trained.dtype == np.uint16
    if enc_dec:  # the input tokens are a column of their own
        assert full.n_input.tolist() == [len(e["input_ids"]) for e in ref]
        assert full.lengths.tolist() == [len(e["input_ids"]) + len(e["labels"]) for e in ref]
    else:  # the padded length is the input length: one array serves both
        assert full.n_input is full.lengths
    train, val = split_validation(full, 0.1, 1000, seed=5)
    assert full.rows is None and full.skip is None  # the whole table, in order
    # the training view stores the rows left out, not a row per example
    assert train.rows is None and len(train.skip) == len(val) == 20
    assert sorted(val.rows.tolist()) == train.skip.tolist()
    kept = [i for i in range(len(ref)) if i not in set(val.rows.tolist())]
    assert [train[i]["labels"] for i in range(len(train))] == [ref[i]["labels"] for i in kept]
    assert [val[i]["labels"] for i in range(len(val))] == [ref[i]["labels"] for i in val.rows]
    assert train[-1] == train[len(train) - 1]
    assert train.take([2, -1, 0]) == [train[2], train[len(train) - 1], train[0]]
    with pytest.raises(IndexError):
        train[len(train)]
    with pytest.raises(IndexError):
        train.take([0, -len(train) - 1])
    assert train.lengths.tolist() == [full.lengths[i] for i in kept]
    assert train.n_trained.tolist() == [full.n_trained[i] for i in kept]
    # views of a table whose numbers were never read read their own rows' numbers only
    fresh = load_examples_arrow(str(tiny_pairs_jsonl), tiny_tokenizer, cache_dir=str(tmp_path), **kw)
    lazy_train, lazy_val = split_validation(fresh, 0.1, 1000, seed=5)
    assert fresh._columns is None
    for a, b in ((lazy_train, train), (lazy_val, val)):
        assert a.lengths.tolist() == b.lengths.tolist()
        assert a.n_trained.tolist() == b.n_trained.tolist()
        assert a.n_input.tolist() == b.n_input.tolist()
    vocab = len(tiny_tokenizer)
    np.testing.assert_array_equal(train.token_counts(vocab) + val.token_counts(vocab),
                                  full.token_counts(vocab))
    # a view of a view maps its positions through both
    part = train.subset(np.array([3, 0, len(train) - 1]))
    assert [part[i]["labels"] for i in range(3)] == \
        [ref[kept[3]]["labels"], ref[kept[0]]["labels"], ref[kept[-1]]["labels"]]
    np.testing.assert_array_equal(part.token_counts(vocab),
                                  sum(train.subset(np.array([i])).token_counts(vocab)
                                      for i in (3, 0, len(train) - 1)))


def test_number_columns_grow_their_dtype_past_65535(tmp_path):
    import datasets

    from sigmoid_head.data.datasets_io import _number_columns
    from sigmoid_head.data.mapped_pages import MappedPages

    ds = datasets.Dataset.from_dict({"length": [5, 70_000, 3], "n_trained": [1, 2, 0]})
    out = _number_columns(ds, ("length", "n_trained"), MappedPages(ds), step=1)
    assert out["length"].dtype == np.uint32 and out["length"].tolist() == [5, 70_000, 3]
    assert out["n_trained"].dtype == np.uint16 and out["n_trained"].tolist() == [1, 2, 0]


def test_tokenizing_in_this_process_gives_back_the_read_pages_batch_by_batch(
        tiny_tokenizer, tiny_pairs_jsonl, tmp_path, monkeypatch):
    import pickle

    from sigmoid_head.data import arrow_tokenize as datasets_io  # the tokenizing half

    monkeypatch.setattr(datasets_io, "_RECORD_BATCH_ROWS", 50)  # 200 pairs: 4 batches
    raw = datasets_io.load_raw(str(tiny_pairs_jsonl), cache_dir=str(tmp_path))
    releases = []
    real = datasets_io.MappedPages.release

    def counted(self):
        releases.append(self.files)
        return real(self)

    monkeypatch.setattr(datasets_io.MappedPages, "release", counted)
    settings = {"is_encoder_decoder": False, "max_length": 40, "source_name": "pairs"}
    ds = datasets_io.tokenize_dataset(raw, tiny_tokenizer, settings, cache_dir=str(tmp_path))
    raw_files = [f["filename"] for f in raw.cache_files]
    # on opening, after each of the 4 batches, and at the end
    assert releases.count(raw_files) == 6
    ref = load_examples(tiny_pairs_jsonl, tiny_tokenizer, is_encoder_decoder=False, max_length=40)
    assert ds["labels"] == [e["labels"] for e in ref]
    # the release is this process's own: neither pickled for workers nor fingerprinted
    fn = datasets_io._Tokenize(tiny_tokenizer, settings)
    key = datasets_io._hash(fn)
    fn.after_batch = print
    assert pickle.loads(pickle.dumps(fn)).after_batch is None
    assert datasets_io._hash(fn) == key
