"""Token-level scores at N positions, from one frozen forward pass, and their per-sequence form.

Per scored token, one value per method of the registry (:mod:`sigmoid_head.registry.methods`):

* ``sigmoid``: the Sigmoid Head's probability of the token (one gathered row of W_qe,
  never a full-vocabulary sigmoid); one such column per head scored;
* ``softmax``: the LM's own probability of the token;
* ``boostedprob``: BoostedProb (the dominant set's mass if the token is dominant);
* ``entropy``: ``H = -sum_v p(v) log p(v)`` of the LM's softmax, in nats: an
  *uncertainty* (higher = less confident);
* ``n_dominant``: size of the dominant set at that position;
* the methods reading attention (RAUQ's per-token confidence, :mod:`.rauq`), when asked
  for: they need what their capture recorded in the same pass and each sequence's earlier
  tokens, so the scoring paths add them after :func:`position_scores` (:mod:`.captured`).

:class:`TokenScores` holds them in one mapping by key. A registered method's values come
from its ``token_values`` function, called with a
:class:`PassRows` view of the positions (the functions of the built-in methods are below).
Force-decoding (:mod:`.force_decode`) and generation (:mod:`.generate`) both compute them
with :func:`position_scores` and cut them per sequence with :func:`split_rows`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from ..head.layer import SigmoidHead
from ..lm.backbone import Backbone
from ..lm.dominant import DominantConfig, DominantSets, boosted_prob, slice_rows
from ..registry import methods as registry
from .softmax_stats import softmax_stats

LOGIT_CHUNK = 2048
"""Positions whose (chunk, V) LM logits are held in memory at once."""
TINY = 1e-45
"""Floor of a probability before taking its log (the smallest float32 subnormal)."""
SOFTMAX_KEYS = ("softmax_log", "boostedprob", "entropy", "n_dominant")
"""The per-position values of the LM's softmax (``entropy`` and ``n_dominant`` beside the
registered methods reading the logits)."""
OLD_FIELDS = (*SOFTMAX_KEYS, "sigmoid_log", "rauq_log")
"""Value keys that earlier releases held as TokenScores fields: still readable as
attributes (``ts.softmax_log``) and accepted as keywords of the constructor."""
FIELDS = OLD_FIELDS


def safe_log(p: np.ndarray) -> np.ndarray:
    """(T,) natural log of probabilities, with 0 floored to :data:`TINY`."""
    return np.log(np.maximum(np.asarray(p, dtype=np.float64), TINY))


class TokenScores:
    """Scores of one scored sequence, one value per scored token (shape (T,) each).

    Attributes:
        ids: token ids.
        values: per-token values by key: each registered method's under its
            :attr:`~sigmoid_head.registry.methods.Method.value_key` (``sigmoid_log``, ``softmax_log``,
            ``boostedprob``, ``rauq_log``, ...), ``entropy`` (softmax entropy in nats, an
            uncertainty) and ``n_dominant`` (dominant-set size), and ``sigmoid_log:<name>``
            for each further head scored in the same pass; a key is absent when not computed.

    ``ts.softmax_log``, ``ts.entropy``, ... (:data:`OLD_FIELDS`) read ``values`` (None when
    absent), ``ts.heads`` the further heads and ``ts.extra`` the other methods' values, as
    earlier releases' fields did.
    """

    def __init__(self, ids: np.ndarray, values: Mapping[str, np.ndarray] | None = None, *,
                 heads: Mapping[str, np.ndarray] | None = None,
                 extra: Mapping[str, np.ndarray] | None = None, **named: Any) -> None:
        unknown = sorted(set(named) - set(OLD_FIELDS))
        if unknown:
            raise TypeError(f"TokenScores got unknown values {unknown}")
        self.ids = ids
        self.values: dict[str, np.ndarray] = {
            **{k: v for k, v in (values or {}).items() if v is not None},
            **{k: v for k, v in named.items() if v is not None},
            **{f"sigmoid_log:{k}": v for k, v in (heads or {}).items()},
            **dict(extra or {})}

    @classmethod
    def from_values(cls, ids: np.ndarray, values: Mapping[str, np.ndarray]) -> TokenScores:
        """Scores from per-position values keyed as :func:`position_scores` keys them."""
        return cls(ids, values)

    def __getattr__(self, name: str) -> Any:
        if name in OLD_FIELDS:
            return self.__dict__.get("values", {}).get(name)
        raise AttributeError(f"'TokenScores' object has no attribute {name!r}")

    def __repr__(self) -> str:
        return f"TokenScores(ids={self.ids!r}, values={sorted(self.values)})"

    @property
    def heads(self) -> dict[str, np.ndarray]:
        """Log sigmoid probability under each further head, by name."""
        return {k.split(":", 1)[1]: v for k, v in self.values.items()
                if k.startswith("sigmoid_log:")}

    @property
    def extra(self) -> dict[str, np.ndarray]:
        """The values of keys that were not fields in earlier releases (further methods)."""
        return {k: v for k, v in self.values.items() if k not in OLD_FIELDS and ":" not in k}

    def get(self, key: str) -> np.ndarray | None:
        """(T,) the values under ``key``, or None."""
        return self.values.get(key)

    def method_values(self, method: registry.Method) -> np.ndarray | None:
        """(T,) the method's per-token values (in its ``token_unit``), or None."""
        return self.values.get(method.value_key)

    def log_probs(self) -> dict[str, np.ndarray]:
        """Method -> (T,) token log-probabilities, for every available registered method."""
        out = {}
        for m in registry.methods():
            v = self.method_values(m)
            if v is not None:
                out[m.name] = v if m.token_unit == "log" else safe_log(v)
        return out

    def probabilities(self) -> dict[str, np.ndarray]:
        """Method -> (T,) token probabilities (a probability-valued method's own values)."""
        out = {}
        for m in registry.methods():
            v = self.method_values(m)
            if v is not None:
                out[m.name] = np.exp(v) if m.token_unit == "log" else v
        return out

    def trimmed(self, n: int) -> TokenScores:
        """The scores of the first ``n`` tokens."""
        return TokenScores(self.ids[:n], {k: v[:n] for k, v in self.values.items()})


def unpack_model(model: Any) -> tuple[Backbone, SigmoidHead | None]:
    """(backbone, head or None) of a SigmoidHeadModel or a bare Backbone."""
    if isinstance(model, Backbone):
        return model, None
    backbone, head = getattr(model, "backbone", None), getattr(model, "head", None)
    if not isinstance(backbone, Backbone):
        raise TypeError(f"expected a SigmoidHeadModel or a Backbone, got {type(model).__name__}")
    return backbone, head


@dataclass
class PassRows:
    """R scored positions of one forward pass, as a method's ``token_values`` sees them.

    Attributes:
        targets: (R,) the scored token at each position.
        hidden: (R, d) the LM head's input.
        head: the Sigmoid Head being scored (methods reading ``"head"``), else None.
        logp: (R, V) the LM's log-softmax (methods reading ``"lm_logits"``), else None;
            the scoring pass makes it only for a registered method other than the
            built-in ones, which read ``target_logp``.
        dominant: the LM softmax's dominant sets, else None.
        target_logp: (R,) the LM's log-probability of each token, else None.
    """

    targets: torch.Tensor
    hidden: torch.Tensor | None = None
    head: SigmoidHead | None = None
    logp: torch.Tensor | None = None
    dominant: DominantSets | None = None
    target_logp: torch.Tensor | None = None


def sigmoid_log(rows: PassRows) -> torch.Tensor:
    """(R,) log sigmoid of each token: one gathered head row per position."""
    t = rows.targets.unsqueeze(-1)  # (R, 1)
    return F.logsigmoid(rows.head.logits(rows.hidden, t).squeeze(-1).float())


def softmax_log(rows: PassRows) -> torch.Tensor:
    """(R,) the LM's log-probability of each token."""
    if rows.target_logp is not None:
        return rows.target_logp
    return rows.logp.gather(-1, rows.targets.unsqueeze(-1)).squeeze(-1)


def boostedprob(rows: PassRows) -> torch.Tensor:
    """(R,) BoostedProb of each token (a probability)."""
    if rows.target_logp is not None and rows.dominant is not None:
        dom = rows.dominant
        return torch.where(dom.contains(rows.targets), dom.mass(), rows.target_logp.exp())
    return boosted_prob(rows.logp, rows.targets, dominant=rows.dominant)


@torch.no_grad()
def position_scores(
    backbone: Backbone,
    head: SigmoidHead | None,
    hidden: torch.Tensor,
    targets: torch.Tensor,
    logits: torch.Tensor | None = None,
    dominant: DominantConfig | None = None,
    *,
    heads: Mapping[str, SigmoidHead] | None = None,
    softmax: bool = True,
    later: Any = None,
) -> dict[str, torch.Tensor]:
    """Every token-level score at N positions.

    Args:
        backbone: the frozen LM (computes logits from ``hidden`` when not given).
        head: the Sigmoid Head, or None.
        hidden: (N, d) LM-head inputs.
        targets: (N,) the scored token at each position.
        logits: (N, V) raw LM logits, if already known (e.g. from generation).
        dominant: dominant-token rule (default: the paper's).
        heads: further Sigmoid Heads on the same backbone, scored from the same hidden states.
        softmax: also compute the softmax scores (False: the sigmoid only, no LM logits).
        later: a :class:`~sigmoid_head.registry.contract.DeferredChecks` the methods' range
            checks wait in, settled by the caller (e.g. :func:`split_rows`, with the pass's
            one copy to the host); None: settled here before returning (one wait).

    Returns:
        ``softmax_log``, ``boostedprob``, ``entropy`` (float32, (N,)), ``n_dominant``
        (long, (N,)) unless ``softmax=False``; with a head ``sigmoid_log`` (float32, (N,));
        ``sigmoid_log:<name>`` per further head.
    """
    from ..registry.contract import DeferredChecks

    parts: dict[str, list[torch.Tensor]] = {}
    own = later is None
    if own:
        later = DeferredChecks()  # the methods' range checks: one wait for the device, at the end
    named = {"": head} if head is not None else {}
    named |= {f":{k}": v for k, v in (heads or {}).items()}
    for s in range(0, targets.shape[0], LOGIT_CHUNK):
        h, t = hidden[s : s + LOGIT_CHUNK], targets[s : s + LOGIT_CHUNK]  # (C, d), (C,)
        for m in registry.methods("head"):
            for suffix, hd in named.items():
                values = method_values(m, PassRows(t, hidden=h, head=hd), t.shape[0], later)  # (C,)
                parts.setdefault(m.value_key + suffix, []).append(values)
        if not softmax:
            continue
        z = logits[s : s + LOGIT_CHUNK].float() if logits is not None else backbone.lm_logits(h)
        rows = slice_rows(z.shape[-1], z.device)  # cache-sized on CPU, one slice on a GPU
        for r in range(0, z.shape[0], rows):
            for k, v in _softmax_stats(z[r : r + rows], t[r : r + rows], dominant, later).items():
                parts.setdefault(k, []).append(v)
    if own:
        later.settle()
    return {k: torch.cat(v) for k, v in parts.items()}


def method_values(method: registry.Method, rows: PassRows, n: int, later: Any = None) -> torch.Tensor:
    """(n,) the per-token values of ``method`` on ``rows``, checked by the plugin contract
    (:func:`sigmoid_head.registry.contract.token_values`: shape, numbers, finite, in range;
    the range check waits in ``later``, a ``DeferredChecks``, when given)."""
    from ..registry.contract import token_values

    return token_values(method.name, method.token_unit, method.values_function()(rows), n, later)


FUSED_METHODS = ("sigmoid_head.scoring.token_scores:softmax_log",
                 "sigmoid_head.scoring.token_scores:boostedprob")
"""The built-in methods reading the logits: they need no (R, V) log-softmax (:mod:`.softmax_stats`)."""


def _softmax_stats(
    z: torch.Tensor, t: torch.Tensor, dominant: DominantConfig | None, later: Any = None
) -> dict[str, torch.Tensor]:
    """Each method reading the LM's logits, entropy and n_dominant (each (R,)) from
    logits z (R, V), with one exponential per logit (:func:`.softmax_stats.softmax_stats`);
    the (R, V) log-softmax is made only for a registered method other than the built-in ones."""
    methods = registry.methods("lm_logits")
    stats = softmax_stats(z, t, dominant)
    full = any(m.token_values not in FUSED_METHODS for m in methods)
    rows = PassRows(t, logp=z.float() - stats.log_norm.unsqueeze(-1) if full else None,
                    dominant=stats.dominant, target_logp=stats.target_logp)
    out = {m.value_key: method_values(m, rows, t.shape[0], later) for m in methods}
    return {**out, "entropy": stats.entropy, "n_dominant": stats.dominant.n_dominant}


def entropy(logp: torch.Tensor) -> torch.Tensor:
    """(C,) softmax entropy in nats from (C, V) log-probabilities, as one fused dot per row.

    Rows holding ``-inf`` log-probabilities (masked tokens: ``0 * -inf``) are redone
    with the explicit ``p log p = 0 where p = 0`` rule.
    """
    p = logp.exp()  # (C, V)
    ent = -torch.linalg.vecdot(p, logp)  # (C,)
    bad = ent.isnan()
    if bool(bad.any()):
        pb, lb = p[bad], logp[bad]
        ent[bad] = -torch.where(pb > 0, pb * lb, torch.zeros_like(pb)).sum(-1)
    return ent


def split_rows(
    values: dict[str, torch.Tensor], ids: torch.Tensor, row: torch.Tensor, n_rows: int,
    later: Any = None,
) -> list[TokenScores]:
    """Cut flat (N,) position scores into one TokenScores per batch row (positions in order).

    One copy to the host for the whole pass (every key, the ids, the rows and, with
    ``later``, the flag of the methods' pending range checks, settled from that copy), then
    one stable sort by row and one split: the cost per row is a numpy view, not a boolean
    mask and a conversion per key (at 64 rows that loop was most of the host's work in a
    scoring pass, which a GPU then waits for)."""
    keys = list(values)
    flag = later.flag() if later is not None else None
    extra = [] if flag is None else [flag.reshape(1)]
    host = _host([*(values[k].detach() for k in keys), row.detach(), ids.detach(), *extra])
    if later is not None:
        later.settle(bool(host[-1][0]) if extra else False)
    rows, ids_np = host[len(keys)], host[len(keys) + 1]
    order = np.argsort(rows, kind="stable")  # keeps each row's positions in their order
    cuts = np.cumsum(np.bincount(rows, minlength=n_rows))[: n_rows - 1]
    # the scores as float64 (n_dominant keeps its integer dtype)
    cast = {k: v if k == "n_dominant" else v.astype(np.float64, copy=False)
            for k, v in zip(keys, host, strict=False)}
    parts = {k: np.split(v[order], cuts) for k, v in cast.items()}
    id_parts = np.split(ids_np[order], cuts)
    return [TokenScores.from_values(id_parts[b], {k: p[b] for k, p in parts.items()})
            for b in range(n_rows)]


def _host(tensors: list[torch.Tensor]) -> list[np.ndarray]:
    """``tensors`` (on one device) as numpy arrays, with one copy to the host: each copy
    waits for the device, so every tensor rides in one float64 buffer and is cut back to
    its shape on the host: floating ones as float64 (every float32, float16 and bfloat16
    value exactly), integer and boolean ones in their own dtype (exactly: ids, counts and
    flags are far below 2**53)."""
    if not tensors:
        return []
    flat = torch.cat([t.reshape(-1).to(torch.float64) for t in tensors]).cpu().numpy()
    out, at = [], 0
    for t in tensors:
        n = t.numel()
        part = flat[at : at + n].reshape(tuple(t.shape))
        if not t.dtype.is_floating_point:
            part = part.astype(np.dtype(str(t.dtype).removeprefix("torch.")))
        out.append(part)
        at += n
    return out
