"""Deferred AdamW (issue 60): dense AdamW's result, computed on the rows with a gradient.

Tolerances: in float64 the deferred updates are dense AdamW's closed form, so the weights
agree to 1e-10 (absolute, on moves of order 0.3; 5e-15 measured). In float32 against torch's
fused kernel: rtol 1e-5, atol 1e-6 (rounding only). Training runs compare heads with atol
1e-5 (float32 sums in another order over tens of steps).
"""

import math

import pytest
import torch
import torch.nn.functional as F

from sigmoid_head.training.config import TrainConfig
from sigmoid_head.training.deferred_adamw import DeferredAdamW, momentum_window
from sigmoid_head.training.optim import make_optimizer

V, D, STEPS = 50, 8, 300


def _cosine(opt: torch.optim.Optimizer) -> torch.optim.lr_scheduler.LambdaLR:
    return torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * s / STEPS)))


def _race(decay: float, eps: float, dtype: torch.dtype, share: float = 0.1, fused: bool = False,
          sparse: bool = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Dense AdamW and DeferredAdamW over STEPS steps where each row has a gradient with
    probability ``share`` (cosine schedule); returns (start, dense, deferred) after a flush."""
    start = torch.randn(V, D, dtype=dtype, generator=torch.Generator().manual_seed(0))
    a, b = torch.nn.Parameter(start.clone()), torch.nn.Parameter(start.clone())
    oa = torch.optim.AdamW([a], lr=1e-2, weight_decay=decay, eps=eps, fused=fused or None)
    ob = DeferredAdamW([b], lr=1e-2, weight_decay=decay, eps=eps)
    sa, sb = _cosine(oa), _cosine(ob)
    g = torch.Generator().manual_seed(1)
    for _ in range(STEPS):
        rows = (torch.rand(V, generator=g) < share).nonzero().squeeze(1)
        values = torch.randn(rows.numel(), D, generator=g, dtype=dtype)
        a.grad = torch.zeros_like(a).index_copy_(0, rows, values)
        b.grad = (torch.sparse_coo_tensor(rows[None], values, (V, D), check_invariants=True) if sparse
                  else a.grad.clone())
        oa.step()
        ob.step()
        sa.step()
        sb.step()
    ob.flush()
    return start, a.detach(), b.detach()


@pytest.mark.parametrize("profile", ["cpu", "cuda"])
@pytest.mark.parametrize("decay", [0.0, 0.1])
@pytest.mark.parametrize("eps", [1e-8, 1e-14])
def test_equals_dense_adamw_in_float64(decay, eps, profile):
    """Both paths: grouped by steps to follow (CPU), and the fixed-shape one an accelerator
    takes (every row the whole window, no host read), forced here on the CPU."""
    from sigmoid_head.lm.profiles import device_profile

    with device_profile(profile):
        start, dense, deferred = _race(decay, eps, torch.float64)
    assert (dense - start).abs().max() > 0.1  # the rows did move
    assert torch.allclose(deferred, dense, rtol=0, atol=1e-10)
    with device_profile(profile):
        _, dense_all, deferred_all = _race(decay, eps, torch.float64, share=1.0)  # nothing skipped
    assert torch.allclose(deferred_all, dense_all, rtol=0, atol=1e-12)


def test_gradients_near_eps_take_the_step_by_step_sum():
    """Columns whose gradients are about eps (sqrt(v) near eps: the power series in
    eps / sqrt(v) would not converge) are summed step by step, and still equal dense AdamW."""
    from sigmoid_head.training import deferred_adamw

    start = torch.randn(V, D, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    a, b = torch.nn.Parameter(start.clone()), torch.nn.Parameter(start.clone())
    oa, ob = torch.optim.AdamW([a], lr=1e-2, weight_decay=0.0), DeferredAdamW([b], lr=1e-2)
    scale = torch.tensor([1.0, 1e-3, 1e-6, 1e-8, 3e-9, 1e-9, 1e-10, 1e-12], dtype=torch.float64)
    g = torch.Generator().manual_seed(1)
    calls = {"n": 0}
    real = deferred_adamw.skipped_moves

    def counted(m, v, f, inv_a, eps):
        e = eps / v.sqrt()
        calls["n"] += int(((e * inv_a.amax(1, keepdim=True) > deferred_adamw.SERIES_LIMIT) & (v > 0)).sum())
        return real(m, v, f, inv_a, eps)

    deferred_adamw.skipped_moves = counted
    try:
        for _ in range(100):
            rows = (torch.rand(V, generator=g) < 0.2).nonzero().squeeze(1)
            a.grad = torch.zeros_like(a).index_copy_(
                0, rows, torch.randn(rows.numel(), D, generator=g, dtype=torch.float64) * scale)
            b.grad = a.grad.clone()
            oa.step()
            ob.step()
        ob.flush()
    finally:
        deferred_adamw.skipped_moves = real
    assert calls["n"] > 0  # the direct sum did run
    assert torch.allclose(b, a, rtol=0, atol=1e-10)


@pytest.mark.parametrize("sparse", [False, True])
def test_float32_against_the_fused_kernel_from_dense_and_sparse_gradients(sparse):
    _, dense, deferred = _race(0.1, 1e-8, torch.float32, fused=True, sparse=sparse)
    assert torch.allclose(deferred, dense, rtol=1e-5, atol=1e-6)


def test_the_lazy_update_is_not_dense_adamw():
    """Why this optimizer exists: the per-row lazy update leaves rarely touched rows far from
    dense AdamW's (a control that this file's comparisons can tell the two apart)."""
    from sigmoid_head.training.optim import RowSparseAdamW

    start = torch.randn(V, D, generator=torch.Generator().manual_seed(0))
    a, b = torch.nn.Parameter(start.clone()), torch.nn.Parameter(start.clone())
    oa, ob = torch.optim.AdamW([a], lr=1e-2, weight_decay=0.0), RowSparseAdamW([b], lr=1e-2)
    g = torch.Generator().manual_seed(1)
    for _ in range(50):
        mask = (torch.rand(V, 1, generator=g) < 0.1).float()
        a.grad = torch.randn(V, D, generator=g) * mask
        b.grad = a.grad.clone()
        oa.step()
        ob.step()
    assert (a - b).abs().max() > 0.01


def test_a_checkpoint_round_trip_continues_exactly():
    def run(split: int | None) -> torch.Tensor:
        p = torch.nn.Parameter(torch.randn(V, D, generator=torch.Generator().manual_seed(0)))
        opt = DeferredAdamW([p], lr=1e-2, weight_decay=0.1)
        g = torch.Generator().manual_seed(2)
        for s in range(40):
            if s == 17:
                opt.flush()  # as the training loop does before every checkpoint
            if s == split:
                saved = {k: v.clone() if torch.is_tensor(v) else v for k, v in opt.state_dict()["state"][0].items()}
                weights = p.detach().clone()
                p = torch.nn.Parameter(weights)
                opt = DeferredAdamW([p], lr=1e-2, weight_decay=0.1)
                opt.load_state_dict({"state": {0: saved}, "param_groups": [
                    {**opt.param_groups[0], "params": [0]}]})
                assert opt.state[p]["rate"].dtype == torch.float64 and opt.state[p]["last"].dtype == torch.int64
            mask = (torch.rand(V, 1, generator=g) < 0.2).float()
            p.grad = torch.randn(V, D, generator=g) * mask
            opt.step()
        opt.flush()
        return p.detach()

    assert torch.equal(run(None), run(17))


def test_flush_twice_is_flush_once_and_an_untouched_parameter_only_decays():
    p = torch.nn.Parameter(torch.ones(4, 2))
    opt = DeferredAdamW([p], lr=0.1, weight_decay=0.5)
    for _ in range(3):
        p.grad = torch.zeros_like(p)
        opt.step()
    opt.flush()
    once = p.detach().clone()
    opt.flush()
    assert torch.equal(p.detach(), once)
    assert torch.allclose(once, torch.full((4, 2), (1 - 0.05) ** 3))


def test_betas_that_keep_a_row_moving_too_long_are_refused_in_one_line():
    assert momentum_window((0.9, 0.999)) == 264
    with pytest.raises(ValueError, match="use --optimizer adamw"):
        DeferredAdamW([torch.nn.Parameter(torch.zeros(2, 2))], betas=(0.99, 0.98))
    with pytest.raises(ValueError, match="invalid lr=0"):
        DeferredAdamW([torch.nn.Parameter(torch.zeros(2, 2))], lr=0.0)


def test_make_optimizer_names_it():
    config = TrainConfig(train_file="x", output_dir="y", optimizer="deferred_adamw", lr=1e-2)
    assert isinstance(make_optimizer(config, [torch.nn.Parameter(torch.zeros(3, 2))]), DeferredAdamW)


def test_embedding_rows_train_like_dense_adamw():
    """The head's own use: sparse row gradients of an embedding lookup."""
    start = torch.randn(V, D, generator=torch.Generator().manual_seed(3))
    a, b = torch.nn.Parameter(start.clone()), torch.nn.Parameter(start.clone())
    oa = torch.optim.AdamW([a], lr=1e-2, weight_decay=0.0, fused=True)
    ob = DeferredAdamW([b], lr=1e-2)
    g = torch.Generator().manual_seed(4)
    for _ in range(60):
        ids = torch.randint(0, V, (6,), generator=g)
        c = torch.randn(6, D, generator=g)
        (F.embedding(ids, a) * c).sum().backward()
        (F.embedding(ids, b, sparse=True) * c).sum().backward()
        oa.step()
        ob.step()
        oa.zero_grad()
        ob.zero_grad()
    ob.flush()
    assert torch.allclose(b, a, rtol=1e-5, atol=1e-6)


def test_rows_long_untouched_are_followed_once_and_a_row_alike_in_any_company():
    """Rows skipped for longer than the momentum window (264 steps) are caught up once and
    equal dense AdamW; and a row's catch-up does not depend on which other rows share the
    call (replicas of a multi-process run compute it in different company)."""
    start = torch.randn(6, D, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    a, b = torch.nn.Parameter(start.clone()), torch.nn.Parameter(start.clone())
    oa = torch.optim.AdamW([a], lr=1e-2, weight_decay=0.05)
    ob = DeferredAdamW([b], lr=1e-2, weight_decay=0.05)
    g = torch.Generator().manual_seed(6)
    for s in range(700):
        grad = torch.zeros(6, D, dtype=torch.float64)
        live = [0] if s % 300 else list(range(6))  # rows 1-5 touched every 300 steps only
        grad[live] = torch.randn(len(live), D, generator=g, dtype=torch.float64)
        a.grad, b.grad = grad.clone(), grad.clone()
        oa.step()
        ob.step()
    state = {k: (v.clone() if torch.is_tensor(v) else v) for k, v in ob.state[b].items()}
    before = b.detach().clone()
    with torch.no_grad():
        ob._catch_up(b, ob.state[b], ob.param_groups[0], torch.tensor([3]), ob.state[b]["step"])
    alone = b.detach()[3].clone()
    with torch.no_grad():
        b.copy_(before)
    ob.state[b].update({k: (v.clone() if torch.is_tensor(v) else v) for k, v in state.items()})
    ob.flush()
    assert torch.equal(b.detach()[3], alone)  # the same bits alone and with every other row
    assert torch.allclose(b, a, rtol=0, atol=1e-10)
