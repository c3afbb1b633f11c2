"""scoring/token_scores.py: gathered sigmoid = full sigmoid, entropy, per-position scores."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from sigmoid_head.data.batching import Collator
from sigmoid_head.scoring.force_decode import score_examples
from sigmoid_head.scoring.token_scores import entropy as softmax_entropy


@pytest.mark.parametrize("which", ["causal", "seq2seq"])
def test_gathered_sigmoid_equals_full_vocabulary_sigmoid(which, request, candidate_examples) -> None:
    model = request.getfixturevalue(which)
    examples = candidate_examples(model)
    scored = score_examples(model, examples, batch_size=2, progress=False)
    batch = Collator(model.tokenizer.pad_token_id, model.backbone.is_encoder_decoder)(examples)
    pos = model.backbone.positions(batch, with_logits=False)
    with torch.no_grad():
        full = torch.sigmoid(model.head.full_logits(pos.hidden).float())  # (N, V)
    expected = full[torch.arange(len(pos.targets)), pos.targets]
    for b, ts in enumerate(scored):
        sel = pos.row == b
        np.testing.assert_array_equal(ts.ids, pos.targets[sel].numpy())
        np.testing.assert_allclose(np.exp(ts.sigmoid_log), expected[sel].numpy(), rtol=1e-5)


def test_entropy_is_positive_and_matches_direct_computation(causal, candidate_examples) -> None:
    examples = candidate_examples(causal)
    scored = score_examples(causal, examples[:1], progress=False)[0]
    ids = torch.tensor([examples[0]["input_ids"]])
    with torch.no_grad():
        logits = causal.backbone.model(input_ids=ids).logits[0].double()  # (T, V)
    p = torch.softmax(logits, -1)
    direct = -(p * p.log()).sum(-1)  # position t predicts token t + 1
    labelled = [t - 1 for t, lab in enumerate(examples[0]["labels"]) if lab != -100]
    np.testing.assert_allclose(scored.entropy, direct[labelled].numpy(), rtol=1e-5)
    assert np.all(scored.entropy > 0)


def test_entropy_handles_masked_tokens() -> None:
    z = torch.randn(3, 50, generator=torch.Generator().manual_seed(0))
    z[1, :10] = -math.inf  # masked tokens: p = 0, log p = -inf
    logp = torch.log_softmax(z, -1)
    p = logp.exp()
    direct = -torch.where(p > 0, p * logp, torch.zeros_like(p)).sum(-1)
    torch.testing.assert_close(softmax_entropy(logp), direct)


def test_split_rows_equals_selecting_each_row_by_mask():
    """split_rows sorts once and splits; a row's positions keep their order, every key its
    dtype and trailing shape, as selecting each row with a boolean mask gives them (rows
    given unsorted, some empty, values with a trailing dimension)."""
    from sigmoid_head.scoring.token_scores import split_rows

    g = torch.Generator().manual_seed(0)
    for trial in range(50):
        n_rows = int(torch.randint(1, 7, (1,), generator=g))
        n = int(torch.randint(0, 30, (1,), generator=g))
        row = torch.randint(0, n_rows, (n,), generator=g)
        if trial % 2:
            row = row.sort().values
        values = {"softmax_log": torch.randn(n, generator=g),
                  "n_dominant": torch.randint(0, 5, (n,), generator=g),
                  "dominant_ids": torch.randint(0, 99, (n, 3), generator=g)}
        ids = torch.randint(0, 999, (n,), generator=g)
        got = split_rows(values, ids, row, n_rows)
        assert len(got) == n_rows
        for b, ts in enumerate(got):
            sel = row == b
            assert np.array_equal(ts.ids, ids[sel].numpy())
            for k, v in values.items():
                want = v[sel].numpy() if k == "n_dominant" else v[sel].double().numpy()
                assert ts.values[k].dtype == want.dtype and np.array_equal(ts.values[k], want), k
