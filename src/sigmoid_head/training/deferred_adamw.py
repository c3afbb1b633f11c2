"""Dense AdamW's result at the cost of the rows with a gradient (``--optimizer deferred_adamw``).

Dense AdamW moves **every** row of the head at every step: a row without a gradient still
decays (weight decay) and keeps moving along its old momentum, ``m / sqrt(v)``, whose two
moments shrink by ``beta1`` and ``beta2`` per step. A row-sparse update that skips such rows
(:class:`~sigmoid_head.training.optim.RowSparseAdamW`, torch's SparseAdam) trains a
different head: with the default betas a row that gets one gradient moves about ten times
further under dense AdamW than under the lazy update, and the negatives of the head are
exactly such rarely drawn rows.

:class:`DeferredAdamW` computes dense AdamW's updates of the skipped steps in closed form
and applies them in one go: before the head next reads the row (:meth:`read_hook`, which
the training loop installs as the head's ``before_read``, so every forward pass sees dense
AdamW's weights), when the row next gets a gradient, or when :meth:`flush` is called (the
training loop calls it before every validation and checkpoint).
For a row last brought up to date after step ``t0`` with moments ``m0`` and ``v0``, the
skipped step ``u = t0 + j`` of dense AdamW moves it by

    lr_u / (1 - beta1**u) * beta1**j * m0 / (sqrt(v0) * a_j + eps),
    a_j = beta2**(j/2) / sqrt(1 - beta2**u),

after the decay ``1 - lr_u * weight_decay`` of every step; the moments become
``beta1**k * m0`` and ``beta2**k * v0`` after ``k`` steps. The sum over the skipped steps
is a per-row float64 sum over steps times a short power series per element
(:func:`skipped_moves`), or, for the rare element whose ``sqrt(v0)`` is near ``eps``, a
sum over its steps.
The learning rates and decays of past steps are kept per step (float64), so a schedule is
followed exactly. The momentum terms fall as ``(beta1 / sqrt(beta2))**j`` (0.9005**j with
the default betas): terms below 1e-12 of the first (after 264 steps with those betas) are
dropped, and betas for which that needs more than :data:`MAX_WINDOW` steps are refused.

So the parameters equal dense AdamW's (bias correction by the global step, as torch's) up
to rounding: tested against ``torch.optim.AdamW`` over
many steps with rows skipped at random, and in training runs of the head
(tests/test_training_deferred_adamw.py, tests/test_training_loop.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from ..lm.profiles import fixed_shapes
from .row_grads import RowOptimizer, touched_rows

MAX_WINDOW = 4096
"""The most skipped steps whose momentum is followed: betas that need more are refused."""
NEGLIGIBLE = 1e-12
"""Momentum terms below this share of the first one are dropped."""
SERIES_TERMS = 6
"""Terms of the power series in ``eps / sqrt(v)`` of :func:`skipped_moves`."""
SERIES_LIMIT = 0.03
"""Above this ``eps / sqrt(v) * max(1 / a_j)`` an element's skipped steps are summed one
by one (the series' remainder would exceed 0.03**6, about 7e-10, of the sum)."""
CHUNK = 8192
"""Rows caught up at once (a (rows, window) float64 table each)."""
KEPT_DTYPES = {"rate": torch.float64, "log_decay": torch.float64, "root": torch.float64, "last": torch.int64}
"""State whose dtype a checkpoint keeps (torch's loading casts every state tensor to the
parameter's dtype): the per-step float64 history and the rows' last steps."""


def momentum_window(betas: tuple[float, float]) -> int:
    """Skipped steps after which ``(beta1 / sqrt(beta2))**j`` is below :data:`NEGLIGIBLE`."""
    beta1, beta2 = betas
    if beta1 == 0:
        return 1
    c = beta1 / math.sqrt(beta2)
    window = math.inf if c >= 1 else math.ceil(math.log(NEGLIGIBLE) / math.log(c))
    if window > MAX_WINDOW:
        raise ValueError(f"DeferredAdamW: betas {betas} keep an untouched row moving for more than "
                         f"{MAX_WINDOW} steps (beta1 / sqrt(beta2) = {c:.5f}); use --optimizer adamw")
    return int(window)


def skipped_moves(m: torch.Tensor, v: torch.Tensor, f: torch.Tensor, inv_a: torch.Tensor,
                  eps: float) -> torch.Tensor:
    """The summed moves of the skipped steps, ``m * sum_j f_j / (sqrt(v) + eps * inv_a_j)``.

    Args:
        m, v: (R, d) the rows' moments when they were last updated.
        f: (R, W) float64 per row and skipped step: the step's rate, momentum decay and later
            weight decay (0 for steps not skipped).
        inv_a: (R, W) float64 ``1 / a_j`` of the module docstring.
        eps: AdamW's eps.

    Returns:
        (R, d) in the moments' dtype. Each element's sum is a power series in
        ``e = eps / sqrt(v)`` over per-row moments ``M_n = sum_j f_j * inv_a_j**n``
        (:data:`SERIES_TERMS` terms: its remainder is below ``(e * max inv_a)**SERIES_TERMS``
        of the sum); an element where ``e * max inv_a`` exceeds :data:`SERIES_LIMIT` (a
        gradient near eps) is summed over its steps directly, in float64.
    """
    x = v.sqrt()
    terms, power = [], f
    for _ in range(SERIES_TERMS):
        terms.append(power.sum(1))
        power = power * inv_a
    moments = torch.stack(terms, 1).to(m.dtype)  # (R, N)
    e = eps / x  # inf where v is 0 (m is 0 there too)
    acc = moments[:, -1:].expand_as(x)
    for n in range(SERIES_TERMS - 2, -1, -1):
        acc = moments[:, n : n + 1] - e * acc
    moves = torch.where(x > 0, m / x * acc, 0.0)
    near = (e * inv_a.amax(1, keepdim=True).to(m.dtype) > SERIES_LIMIT) & (x > 0)
    if bool(near.any()):
        r, col = near.nonzero(as_tuple=True)
        for start in range(0, r.numel(), CHUNK):
            rr, cc = r[start : start + CHUNK], col[start : start + CHUNK]
            xs = x[rr, cc].double()[:, None]  # (n, 1)
            total = (f[rr] / (xs + eps * inv_a[rr])).sum(1)  # (n,)
            moves[rr, cc] = (m[rr, cc].double() * total).to(m.dtype)
    return moves


class DeferredAdamW(RowOptimizer):
    """AdamW whose updates of rows without a gradient wait until the row is next touched.

    Args:
        params: the parameters (or parameter groups); every parameter's first dimension is
            its rows.
        lr: learning rate.
        betas: the moments' decay rates.
        eps: added to the denominator (of the steps with a gradient; see the module).
        weight_decay: decoupled weight decay, applied to every row at every step, as dense
            AdamW does.
    """

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0) -> None:
        super().__init__(params, lr, betas, eps, weight_decay)
        momentum_window(tuple(betas))

    def _state(self, p: torch.Tensor) -> dict:
        state = self.state[p]
        if not state:
            state["step"] = 0  # global steps taken
            state["last"] = torch.zeros(p.shape[0], dtype=torch.int64, device=p.device)
            state["exp_avg"] = torch.zeros_like(p, memory_format=torch.contiguous_format)
            state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.contiguous_format)
            # per step u (index u; 0 unused): lr_u * sqrt(bc2_u) / bc1_u, the running sum of
            # log(1 - lr_u * weight_decay), and sqrt(bc2_u) = sqrt(1 - beta2**u)
            state["rate"] = torch.zeros(1, dtype=torch.float64, device=p.device)
            state["log_decay"] = torch.zeros(1, dtype=torch.float64, device=p.device)
            state["root"] = torch.zeros(1, dtype=torch.float64, device=p.device)
        return state

    @staticmethod
    def _record(state: dict, group: dict) -> int:
        """Count one more step; store its rate and decay. Returns its number."""
        s = state["step"] = int(state["step"]) + 1
        beta1, beta2 = group["betas"]
        lr, decay = group["lr"], group["weight_decay"]
        rate = lr * math.sqrt(1 - beta2**s) / (1 - beta1**s)
        log_d = math.log1p(-lr * decay) if decay else 0.0
        if state["rate"].numel() <= s:  # grow by doubling
            for key in ("rate", "log_decay", "root"):
                grown = torch.zeros(2 * (s + 1), dtype=torch.float64, device=state[key].device)
                grown[: state[key].numel()] = state[key]
                state[key] = grown
        state["rate"][s] = rate
        state["root"][s] = math.sqrt(1 - beta2**s)
        state["log_decay"][s] = state["log_decay"][s - 1] + log_d
        return s

    @classmethod
    def _catch_up(cls, p: torch.Tensor, state: dict, group: dict, rows: torch.Tensor, upto: int) -> None:
        """Bring ``rows`` up to date after step ``upto`` (repeats allowed), at most
        :data:`CHUNK` rows at once. On the CPU the rows are grouped by how many steps they
        have to follow (up to 2, 4, 8, ... steps, capped at the momentum window), so the
        work is about the steps to follow, not rows x window; with fixed shapes (an
        accelerator) every row takes the whole window in one pass, and a row with nothing
        to follow is left as it is by the arithmetic: no host read of a data-dependent size."""
        window = momentum_window(group["betas"])
        if fixed_shapes(p.device):
            for start in range(0, rows.numel(), CHUNK):
                cls._catch_up_rows(p, state, group, rows[start : start + CHUNK], upto, window)
            return
        last = state["last"].index_select(0, rows)
        behind = last < upto
        rows, k = rows[behind], upto - last[behind]  # only rows with steps to follow (a host sync)
        if rows.numel() == 0:
            return
        longest, low, width = int(k.max()), 0, 2
        while low < longest:  # a group's window depends on k only: a row's result is the same in any call
            final = width >= window  # the last group: every row left, the whole window
            high = longest if final else width
            part = rows[(k > low) & (k <= high)]
            for start in range(0, part.numel(), CHUNK):
                cls._catch_up_rows(p, state, group, part[start : start + CHUNK], upto, window if final else width)
            low, width = high, 2 * width

    @staticmethod
    def _catch_up_rows(p: torch.Tensor, state: dict, group: dict, rows: torch.Tensor, upto: int,
                       window: int) -> None:
        """The decay and momentum of every step since each row's last update (the
        momentum's first ``window`` steps), then the moments decayed to match."""
        last = state["last"].index_select(0, rows)  # (R,)
        k = upto - last  # (R,) steps to follow, all > 0
        beta1, beta2 = group["betas"]
        c = beta1 / math.sqrt(beta2)
        rate, log_d, root = state["rate"], state["log_decay"], state["root"]
        j = torch.arange(1, window + 1, device=p.device)  # (W,)
        u = (last[:, None] + j).clamp_(max=upto)  # (R, W) the skipped steps
        jd = j.double()
        powers = torch.tensor(c, dtype=torch.float64, device=p.device) ** jd  # (W,)
        f = torch.where(j <= k[:, None], rate[u] * powers * torch.exp(log_d[upto] - log_d[u]), 0.0)  # (R, W)
        # the skipped step j divides by sqrt(v0) + eps / a_j, a_j = beta2**(j/2) / sqrt(1 - beta2**u)
        inv_a = root[u] * torch.tensor(beta2, dtype=torch.float64, device=p.device) ** (-jd / 2)
        keep = torch.exp(log_d[upto] - log_d[last])  # (R,) the decay of the k steps
        shape = (-1,) + (1,) * (p.dim() - 1)
        m = state["exp_avg"].index_select(0, rows)
        v = state["exp_avg_sq"].index_select(0, rows)
        moves = skipped_moves(m.reshape(m.shape[0], -1), v.reshape(v.shape[0], -1), f, inv_a, group["eps"])
        w = p.index_select(0, rows)
        w.mul_(keep.to(p.dtype).view(shape)).sub_(moves.view_as(w))
        kd = k.double().view(shape)
        m.mul_((beta1**kd).to(p.dtype))
        v.mul_((beta2**kd).to(p.dtype))
        p.index_copy_(0, rows, w)
        state["exp_avg"].index_copy_(0, rows, m)
        state["exp_avg_sq"].index_copy_(0, rows, v)
        state["last"].index_fill_(0, rows, upto)

    def _step_param(self, p: torch.Tensor, group: dict) -> None:
        """One AdamW step of ``p``: the rows with a gradient are brought up to date and
        updated; the others only have the step recorded."""
        state = self._state(p)
        s = self._record(state, group)
        if p.grad is None:
            return
        rows, grad = touched_rows(p.grad)
        if rows.numel() == 0:
            return
        self._catch_up(p, state, group, rows, s - 1)
        self._update(p, state, group, rows, grad, s)

    @staticmethod
    def _update(p: torch.Tensor, state: dict, group: dict, rows: torch.Tensor, grad: torch.Tensor,
                s: int) -> None:
        beta1, beta2 = group["betas"]
        lr, eps, decay = group["lr"], group["eps"], group["weight_decay"]
        m = state["exp_avg"].index_select(0, rows).lerp_(grad, 1 - beta1)
        v = state["exp_avg_sq"].index_select(0, rows).mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        w = p.index_select(0, rows)
        if decay:
            w.mul_(1 - lr * decay)
        bc1, bc2_sqrt = 1 - beta1**s, math.sqrt(1 - beta2**s)
        w.addcdiv_(m, v.sqrt().div_(bc2_sqrt).add_(eps), value=-lr / bc1)
        p.index_copy_(0, rows, w)
        state["exp_avg"].index_copy_(0, rows, m)
        state["exp_avg_sq"].index_copy_(0, rows, v)
        state["last"].index_fill_(0, rows, s)

    def load_state_dict(self, state_dict: dict) -> None:
        """torch's loading, which casts the state to the parameter's dtype, then the state of
        :data:`KEPT_DTYPES` put back from the saved tensors in its own dtype."""
        super().load_state_dict(state_dict)
        saved = [i for g in state_dict["param_groups"] for i in g["params"]]
        params = [p for g in self.param_groups for p in g["params"]]
        for sid, p in zip(saved, params, strict=True):
            for key, dtype in KEPT_DTYPES.items():
                if key in state_dict["state"].get(sid, {}):
                    self.state[p][key] = state_dict["state"][sid][key].to(device=p.device, dtype=dtype)

    def read_hook(self, params: list[torch.Tensor]) -> Callable[[torch.Tensor], None]:
        """A function of token ids that brings those rows of ``params`` up to date: the head
        calls it before it reads them (``SigmoidHead.before_read``), so every forward pass
        sees the weights dense AdamW would have."""
        groups = {p: g for g in self.param_groups for p in g["params"]}
        if any(p not in groups for p in params):
            raise ValueError("DeferredAdamW.read_hook: a parameter this optimizer does not update")

        @torch.no_grad()
        def hook(ids: torch.Tensor) -> None:
            rows = None
            for p in params:
                state = self.state.get(p)
                if not state or int(state["step"]) == 0:
                    continue
                if rows is None:  # repeats are harmless (a row caught up has nothing left to follow)
                    rows = ids.reshape(-1) if fixed_shapes(ids.device) else ids.reshape(-1).unique()
                self._catch_up(p, state, groups[p], rows, int(state["step"]))

        return hook

    @torch.no_grad()
    def flush(self) -> None:
        """Bring every row up to date (before the weights are read: validation, saving)."""
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state.get(p)
                if not state or int(state["step"]) == 0:
                    continue
                rows = torch.arange(p.shape[0], device=p.device)
                self._catch_up(p, state, group, rows, int(state["step"]))
