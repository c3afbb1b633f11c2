"""Row-sparse AdamW (issue 60): AdamW on the touched rows, nothing on the others.

Tolerance: float32 values compared with rtol 1e-5, atol 1e-6 against torch's fused
AdamW (the same formula, other kernels: the results differ only in rounding).
"""

import pytest
import torch
import torch.nn.functional as F

from sigmoid_head.head.layer import SigmoidHead, sigmoid_bce
from sigmoid_head.training.config import TrainConfig
from sigmoid_head.training.optim import RowSparseAdamW, make_optimizer, touched_rows

TOL = {"rtol": 1e-5, "atol": 1e-6}
V, D = 50, 8


def _pair(decay: float = 0.1, lr: float = 1e-2) -> tuple[torch.nn.Parameter, torch.nn.Parameter,
                                                          torch.optim.Optimizer, torch.optim.Optimizer]:
    """The same (V, D) start for dense fused AdamW and for RowSparseAdamW."""
    start = torch.randn(V, D, generator=torch.Generator().manual_seed(0))
    dense, sparse = torch.nn.Parameter(start.clone()), torch.nn.Parameter(start.clone())
    return (dense, sparse, torch.optim.AdamW([dense], lr=lr, weight_decay=decay, fused=True),
            RowSparseAdamW([sparse], lr=lr, weight_decay=decay))


def _step(dense, sparse, opt_d, opt_s, ids: torch.Tensor, seed: int) -> None:
    """One step of both on the loss sum(embedding(ids) * c): sparse grads for RowSparseAdamW."""
    c = torch.randn(ids.shape[0], D, generator=torch.Generator().manual_seed(seed))
    (F.embedding(ids, dense) * c).sum().backward()
    (F.embedding(ids, sparse, sparse=True) * c).sum().backward()
    assert sparse.grad.is_sparse
    for opt in (opt_d, opt_s):
        opt.step()
        opt.zero_grad(set_to_none=True)


def test_one_step_equals_dense_adamw_on_touched_rows_and_leaves_the_others():
    dense, sparse, opt_d, opt_s = _pair()
    start = sparse.detach().clone()
    ids = torch.tensor([3, 7, 7, 12, 40])  # a repeated row: its gradients are summed
    _step(dense, sparse, opt_d, opt_s, ids, seed=1)
    touched = torch.zeros(V, dtype=torch.bool)
    touched[ids] = True
    torch.testing.assert_close(sparse[touched], dense[touched], **TOL)
    assert torch.equal(sparse[~touched], start[~touched])  # bit for bit
    assert not torch.equal(dense[~touched], start[~touched])  # dense AdamW decays them


def test_rows_touched_every_step_follow_dense_adamw_and_skipped_rows_stay_lazy():
    dense, sparse, opt_d, opt_s = _pair()
    _step(dense, sparse, opt_d, opt_s, torch.tensor([1, 2, 5]), seed=1)
    after_first = sparse.detach().clone()
    for seed in range(2, 6):  # row 5 is not touched again; rows 1 and 2 always are
        _step(dense, sparse, opt_d, opt_s, torch.tensor([1, 2, 9 + seed]), seed=seed)
    torch.testing.assert_close(sparse[1:3], dense[1:3], **TOL)
    assert torch.equal(sparse[5], after_first[5])  # lazy: no decay, no momentum drift
    assert not torch.allclose(dense[5], after_first[5], **TOL)  # dense AdamW kept moving it
    # row 14 was first touched at step 5: its per-row count makes its update a first
    # Adam step, lr * sign(g) plus the decay (g = c, the loss is linear in the row)
    c = torch.randn(3, D, generator=torch.Generator().manual_seed(5))[2]  # row 14's gradient
    start = torch.randn(V, D, generator=torch.Generator().manual_seed(0))[14]
    torch.testing.assert_close(sparse[14], start * (1 - 1e-2 * 0.1) - 1e-2 * c.sign(), **TOL)
    state = opt_s.state[sparse]
    assert int(state["step"][14]) == 1 and int(state["step"][1]) == 5
    assert int(state["step"][0]) == 0


def test_dense_and_sparse_gradients_give_the_same_update():
    # DDP hands the optimizer the all-reduced dense gradient; one process a sparse one
    start = torch.randn(V, D, generator=torch.Generator().manual_seed(3))
    a, b = torch.nn.Parameter(start.clone()), torch.nn.Parameter(start.clone())
    opts = [RowSparseAdamW([a], lr=1e-2, weight_decay=0.1), RowSparseAdamW([b], lr=1e-2, weight_decay=0.1)]
    for seed in range(3):
        ids = torch.randint(0, V, (6,), generator=torch.Generator().manual_seed(seed))
        c = torch.randn(6, D, generator=torch.Generator().manual_seed(10 + seed))
        (F.embedding(ids, a) * c).sum().backward()
        (F.embedding(ids, b, sparse=True) * c).sum().backward()
        for opt in opts:
            opt.step()
            opt.zero_grad(set_to_none=True)
    assert torch.equal(a, b)
    assert torch.equal(opts[0].state[a]["step"], opts[1].state[b]["step"])


def test_touched_rows_drops_rows_whose_summed_gradient_is_zero():
    grad = torch.sparse_coo_tensor(torch.tensor([[4, 1, 4]]), torch.tensor([[1.0, 2.0], [0.0, 1.0],
                                                                            [-1.0, -2.0]]), (6, 2),
                                   check_invariants=True)
    rows, values = touched_rows(grad)
    assert rows.tolist() == [1] and values.tolist() == [[0.0, 1.0]]
    dense_rows, _ = touched_rows(grad.to_dense())
    assert dense_rows.tolist() == [1]
    with pytest.raises(ValueError, match="1 sparse dim"):
        touched_rows(torch.zeros(3, 3).to_sparse(2))


def test_state_dict_round_trip_continues_identically(tmp_path):
    dense, sparse, opt_d, opt_s = _pair()
    _step(dense, sparse, opt_d, opt_s, torch.tensor([0, 4, 8]), seed=1)
    torch.save({"p": sparse.detach().clone(), "opt": opt_s.state_dict()}, tmp_path / "state.pt")
    saved = torch.load(tmp_path / "state.pt", weights_only=True)  # as checkpoint.py reads it
    copy = torch.nn.Parameter(saved["p"])
    opt_c = RowSparseAdamW([copy], lr=1.0)  # lr and decay come back from the state
    opt_c.load_state_dict(saved["opt"])
    assert opt_c.state[copy]["step"].dtype == torch.int32
    ids = torch.tensor([4, 5])
    for p, opt in ((sparse, opt_s), (copy, opt_c)):
        (F.embedding(ids, p, sparse=True) * 0.5).sum().backward()
        opt.step()
    assert torch.equal(sparse, copy)
    assert opt_c.state[copy]["step"].tolist() == opt_s.state[sparse]["step"].tolist()


def test_bf16_parameters_keep_exact_step_counts_across_a_round_trip():
    p = torch.nn.Parameter(torch.zeros(4, 2, dtype=torch.bfloat16))
    opt = RowSparseAdamW([p], lr=1e-3)
    for _ in range(300):  # 300 is not a bfloat16 number (it rounds to 300 or 302 only by luck)
        p.grad = torch.ones_like(p)
        opt.step()
    other = RowSparseAdamW([torch.nn.Parameter(torch.zeros(4, 2, dtype=torch.bfloat16))], lr=1e-3)
    other.load_state_dict(opt.state_dict())
    assert next(iter(other.state.values()))["step"].tolist() == [300] * 4


def test_make_optimizer_and_the_head_with_bias_and_low_rank():
    config = TrainConfig(train_file="x", output_dir="y", optimizer="sparse_adamw", lr=1e-2)
    for rank in (0, 2):
        head = SigmoidHead(V, D, bias=True, rank=rank, sparse=True)
        with torch.no_grad():
            for p in head.parameters():
                p.normal_(generator=torch.Generator().manual_seed(rank))
        before = {n: p.detach().clone() for n, p in head.named_parameters()}
        opt = make_optimizer(config, list(head.parameters()))
        assert isinstance(opt, RowSparseAdamW)
        hidden = torch.randn(3, D, generator=torch.Generator().manual_seed(4))
        sigmoid_bce(head, hidden, torch.tensor([1, 2, 3]), torch.tensor([[4], [5], [6]])).sum().backward()
        opt.step()
        for name, p in head.named_parameters():
            moved = (p != before[name]).reshape(p.shape[0], -1).any(1)
            if name == "lora_b":  # (r, d), dense gradient: every row moves
                assert bool(moved.all()), name
            else:  # rows 1..6 of the (V, ...) parameters only
                assert moved.nonzero().squeeze(1).tolist() == [1, 2, 3, 4, 5, 6], name


def test_invalid_settings_are_refused_in_one_line():
    with pytest.raises(ValueError, match="RowSparseAdamW: invalid lr=0"):
        RowSparseAdamW([torch.nn.Parameter(torch.zeros(2, 2))], lr=0.0)
    with pytest.raises(ValueError, match="optimizer must be one of"):
        TrainConfig(train_file="x", output_dir="y", optimizer="sparse_adam_w")
