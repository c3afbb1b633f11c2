"""The paper authors' released heads, loaded without running their code.

The released heads (e.g. ``tuanh23/SigmoidHead-OLMo-2-0425-1B-SFT``) are a folder with
``model.safetensors`` holding one tensor ``weight`` of shape (V, d) and a ``config.json``
meant for a ``SigmoidHeadConfig`` class that ``transformers`` would import from the
repository (``trust_remote_code``). Here the JSON is only read as data and the tensor
comes from safetensors (no pickle), so no code from the repository is ever executed;
the folder's ``*.py`` files are not even downloaded.

The head is checked against its base model before it is used: one 2-D ``weight`` tensor;
its shape equal to the base model's output matrix (V rows, d columns) and to the sizes
the config declares; every token id of the base tokenizer has a row; finite values.
``SigmoidHeadModel.from_pretrained`` recognises the format (:func:`is_released_head`)
and gives an ordinary model, so ``save_pretrained`` converts it to this library's format.

A checkpoint folder of the authors' training code (Hugging Face Trainer's
``checkpoint-<step>``) holds the same ``model.safetensors`` (their model's ``state_dict`` is
the head's) and no ``config.json`` (:func:`is_trainer_checkpoint`): it loads the same way
once the base model is given; of Trainer's files only ``trainer_state.json`` is read (as
JSON), its pickles never.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from ..lm.backbone import Backbone
from .folder import CONFIG_NAME, HeadConfig, fingerprint, first_overflowing
from .layer import HeadMismatchError

RELEASED_CONFIG = "config.json"
RELEASED_WEIGHTS = "model.safetensors"
TENSOR_NAME = "weight"
BASE_MODEL_KEYS = ("base_model", "base_model_name_or_path", "base_model_name", "base_model_id",
                   "model_id", "model_name_or_path")
"""config.json keys that may name the base model, in the order they are tried."""
VOCAB_KEYS = ("vocab_size", "out_features")
HIDDEN_KEYS = ("hidden_size", "in_features")
FORMAT_NAME = "sigmoid-confidence released head"
TRAINER_FORMAT_NAME = "sigmoid-confidence Trainer checkpoint"
TRAINER_STATE = "trainer_state.json"
"""Trainer's JSON record of a run, beside the weights in each checkpoint folder."""


class ReleasedHeadError(HeadMismatchError):
    """A released head that is malformed or does not fit the base model."""


def is_released_head(directory: str | Path) -> bool:
    """Whether a folder is in the released format, or is a Trainer checkpoint of the
    authors' training code (:func:`is_trainer_checkpoint`), and not in this library's own."""
    d = Path(directory)
    if (d / CONFIG_NAME).is_file() or not (d / RELEASED_WEIGHTS).is_file():
        return False
    if not (d / RELEASED_CONFIG).is_file():
        return True  # a Trainer checkpoint (or not a head: load_released_files says which)
    return _looks_like_head(_read_config(d))


def is_trainer_checkpoint(directory: str | Path) -> bool:
    """Whether a folder is a Trainer checkpoint of the authors' training code: the
    ``model.safetensors`` their model's ``state_dict`` (the head's ``weight`` only) gives,
    beside Trainer's own files, and no ``config.json`` (so no base model is named)."""
    d = Path(directory)
    return ((d / RELEASED_WEIGHTS).is_file() and not (d / RELEASED_CONFIG).is_file()
            and not (d / CONFIG_NAME).is_file())


def trainer_checkpoints(directory: str | Path) -> list[Path]:
    """The ``checkpoint-<step>`` folders of a Trainer output folder, by step."""
    found = [p for p in Path(directory).glob("checkpoint-*")
             if p.is_dir() and p.name.removeprefix("checkpoint-").isdigit()]
    return sorted(found, key=lambda p: int(p.name.removeprefix("checkpoint-")))


def _trainer_record(directory: Path) -> dict[str, Any]:
    """What a Trainer checkpoint's ``trainer_state.json`` (JSON, read as data) says of the
    run: its step and best metric; {} when absent or unreadable. Trainer's pickles
    (``training_args.bin``, ``optimizer.pt``, ...) are never opened."""
    from ..safe.json_io import read_json

    try:
        state = read_json(directory / TRAINER_STATE)  # too deep: a ValueError, not a crash
    except (OSError, ValueError):
        return {}
    if not isinstance(state, dict):
        return {}
    keys = ("global_step", "epoch", "best_metric", "best_model_checkpoint")
    return {k: state[k] for k in keys if isinstance(state.get(k), int | float | str)}


def _read_config(directory: Path) -> dict[str, Any]:
    from ..safe.json_io import read_json

    try:
        data = read_json(directory / RELEASED_CONFIG)  # bad, not UTF-8 or too deep: one line
    except (OSError, ValueError) as err:
        raise ReleasedHeadError(f"{directory / RELEASED_CONFIG} is not readable JSON: "
                                f"{str(err).removeprefix(str(directory / RELEASED_CONFIG) + ': ')}"
                                ) from None
    if not isinstance(data, dict):
        raise ReleasedHeadError(f"{directory / RELEASED_CONFIG} is not a JSON object")
    return data


def _looks_like_head(config: dict[str, Any]) -> bool:
    archs, auto_map = config.get("architectures") or [], config.get("auto_map") or {}
    names = [str(config.get("model_type", ""))]
    names += [str(a) for a in (archs if isinstance(archs, list) else [archs])]
    names += [str(v) for v in (auto_map.values() if isinstance(auto_map, dict) else [auto_map])]
    return any("sigmoid" in n.lower() for n in names)


def _first(config: dict[str, Any], keys: tuple[str, ...]) -> Any:
    return next((config[k] for k in keys if config.get(k) is not None), None)


def read_released_weight(directory: Path) -> torch.Tensor:
    """The (V, d) ``weight`` tensor, after checking it is the file's only tensor."""
    from safetensors import safe_open

    path = directory / RELEASED_WEIGHTS
    try:
        with safe_open(str(path), framework="pt") as fh:
            names = list(fh.keys())
            if names != [TENSOR_NAME]:
                shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
                raise ReleasedHeadError(
                    f"{path} should hold exactly one tensor {TENSOR_NAME!r} (a released Sigmoid "
                    f"Head) but holds {len(names)}: {shown}. Is this a full model checkpoint?")
            weight = fh.get_tensor(TENSOR_NAME)
    except ReleasedHeadError:
        raise
    except Exception as err:  # SafetensorError (a header claiming 2^62 bytes, a cut file), OSError
        first = next(iter(str(err).splitlines()), "") or type(err).__name__
        raise ReleasedHeadError(f"{path}: not a readable safetensors file ({first})") from None
    if weight.ndim != 2:
        raise ReleasedHeadError(f"{path}: {TENSOR_NAME!r} has shape {tuple(weight.shape)}, "
                                "expected (vocabulary, hidden size)")
    if not weight.is_floating_point():
        raise ReleasedHeadError(f"{path}: {TENSOR_NAME!r} has dtype "
                                f"{str(weight.dtype).removeprefix('torch.')}; a head is floating point")
    return weight


def check_released(weight: torch.Tensor, config: dict[str, Any], backbone: Backbone) -> None:
    """Raise ReleasedHeadError unless the head's shape and vocabulary fit the base model."""
    v, d = weight.shape
    base_v, base_d = backbone.output_weight().shape
    problems = []
    declared_v, declared_d = _first(config, VOCAB_KEYS), _first(config, HIDDEN_KEYS)
    for keys, value in ((VOCAB_KEYS, declared_v), (HIDDEN_KEYS, declared_d)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            key = next(k for k in keys if config.get(k) is not None)
            raise ReleasedHeadError(f"config.json: {key} must be an integer, got {value!r:.40}")
    if declared_v is not None and declared_v != v:
        problems.append(f"config.json declares vocabulary {declared_v} but the tensor has {v} rows")
    if declared_d is not None and declared_d != d:
        problems.append(f"config.json declares hidden size {declared_d} but the tensor has {d} columns")
    if v != base_v:
        problems.append(f"the head has {v} vocabulary rows but the base model's output layer has {base_v}")
    if d != base_d:
        problems.append(f"the head's hidden size is {d} but the base model's is {base_d}")
    n_tok = len(backbone.tokenizer)  # type: ignore[arg-type]
    if n_tok > v:
        problems.append(f"the base tokenizer has {n_tok} tokens but the head only {v} rows "
                        "(token ids without a row)")
    if not problems and not bool(torch.isfinite(weight).all()):
        problems.append("the weight holds NaN or infinite values")
    elif not problems and first_overflowing(weight) is not None:
        problems.append(f"weight row {first_overflowing(weight)} is too large: its logits "
                        "overflow float32")
    if problems:
        raise ReleasedHeadError(
            f"the released head does not fit base model {backbone.name_or_path!r}: "
            + "; ".join(problems) + ".")
    check_identity(config, backbone)


def _names(name: str) -> set[str]:
    """The spellings under which ``name`` (a Hub id or a folder) may name one model: the
    whole, its last two parts (``org/model``) and its last part, lower-cased."""
    parts = [p for p in str(name).replace("\\", "/").lower().split("/") if p and p != "."]
    return {"/".join(parts), "/".join(parts[-2:]), *parts[-1:]} if parts else set()


def check_identity(config: dict[str, Any], backbone: Backbone) -> None:
    """Check the base model's identity as far as the authors' format allows.

    Their format has no fingerprint of the base model (this library's heads do), so two
    models of the same shape cannot be told apart by the weights: the base model named in
    ``config.json`` must be the one given, by name (a Hub id, its last part, or the
    ``_name_or_path`` the model's own config records), and its kind must be the one the
    config declares (their heads are for decoder-only models: an encoder-decoder base is
    refused unless the config declares ``is_encoder_decoder: true``). What cannot be
    checked is said in a warning: that the identity rests on the name (the weights of a
    model of that name are not compared), or, for a Trainer checkpoint that names no base
    model, that only the shapes were checked.

    Raises:
        ReleasedHeadError: the config names another base model or another kind.
    """
    import logging

    log = logging.getLogger(__name__)
    named = _first(config, BASE_MODEL_KEYS)
    given = backbone.name_or_path
    declared_kind = config.get("is_encoder_decoder")
    if not isinstance(declared_kind, bool):
        declared_kind = False  # the authors' heads are trained on decoder-only models
    if declared_kind != backbone.is_encoder_decoder:
        if declared_kind:
            raise ReleasedHeadError(f"config.json declares an encoder-decoder base model but "
                                    f"{given!r} is decoder-only")
        raise ReleasedHeadError(f"the authors' heads are for decoder-only models (config.json "
                                f"declares no is_encoder_decoder: true) but {given!r} is an "
                                "encoder-decoder")
    if not isinstance(named, str):
        log.warning("%s: the authors' format names no base model and has no fingerprint: only "
                    "the shapes of %r were checked, not its identity", FORMAT_NAME, given)
        return
    recorded = getattr(getattr(backbone.model, "config", None), "_name_or_path", "") or ""
    if _names(named) & (_names(given) | _names(recorded)):
        log.warning("%s: the base model %r is checked by name only (the format has no "
                    "fingerprint of its weights)", FORMAT_NAME, given)
        return
    raise ReleasedHeadError(
        f"config.json names base model {named!r} but the base model given is {given!r}; the "
        "authors' format has no fingerprint, so the base model is checked by name: pass "
        f"--model {named} (or a local copy in a folder of that name)")


def released_base_model(directory: str | Path) -> str | None:
    """The base model a released head's config.json names, if any (a Trainer checkpoint
    names none)."""
    if is_trainer_checkpoint(directory):
        return None
    name = _first(_read_config(Path(directory)), BASE_MODEL_KEYS)
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise ReleasedHeadError(f"{Path(directory) / RELEASED_CONFIG}: the base model must be "
                                f"named by a non-empty string, got {name!r:.40}")
    return name


def load_released_files(directory: str | Path, backbone: Backbone, source: str | None = None,
                        ) -> tuple[HeadConfig, dict[str, torch.Tensor]]:
    """Read a released head and check it against its base model.

    Args:
        directory: the head's folder (``config.json`` + ``model.safetensors``).
        backbone: the loaded base model.
        source: where the head came from (a Hub id), recorded in the config.

    Returns:
        A :class:`HeadConfig` (with the base model's fingerprint, the released config kept
        under ``training``) and the state ``{"weight": (V, d) float32}``.

    Raises:
        ReleasedHeadError: on any malformed file or mismatch with the base model.
    """
    directory = Path(directory)
    trainer = is_trainer_checkpoint(directory)
    for name in (RELEASED_WEIGHTS,) if trainer else (RELEASED_CONFIG, RELEASED_WEIGHTS):
        if not (directory / name).is_file():
            raise ReleasedHeadError(f"{directory} is not a released head: {name} is missing")
    config = {} if trainer else _read_config(directory)
    weight = read_released_weight(directory)
    check_released(weight, config, backbone)  # shapes, values and (by name) identity
    training: dict[str, Any] = {"imported_from": source or str(directory)}
    if trainer:
        training.update(format=TRAINER_FORMAT_NAME, trainer_state=_trainer_record(directory))
    else:
        training.update(format=FORMAT_NAME, released_config=config)
    head_config = HeadConfig(
        base_model=backbone.name_or_path, base_revision=backbone.revision,
        vocab_size=weight.shape[0], hidden_size=weight.shape[1],
        fingerprint=fingerprint(backbone.output_weight()),
        is_encoder_decoder=backbone.is_encoder_decoder, bias=False, training=training,
    )
    return head_config, {"weight": weight.float()}


def save_released(weight: torch.Tensor, directory: str | Path, base_model: str,
                  extra: dict[str, Any] | None = None) -> Path:
    """Write a head in the released format (for tests and for sharing with that code).

    Args:
        weight: (V, d) head matrix.
        directory: output folder.
        base_model: what config.json names as the base model.
        extra: further config.json entries.
    """
    from safetensors.torch import save_file

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    save_file({TENSOR_NAME: weight.detach().contiguous().cpu()}, str(directory / RELEASED_WEIGHTS),
              metadata={"format": "pt"})
    config = {
        "architectures": ["SigmoidHead"],
        "auto_map": {"AutoConfig": "configuration_sigmoid_head.SigmoidHeadConfig",
                     "AutoModel": "modeling_sigmoid_head.SigmoidHead"},
        "model_type": "sigmoid_head",
        "base_model": base_model,
        "vocab_size": int(weight.shape[0]),
        "hidden_size": int(weight.shape[1]),
        **(extra or {}),
    }
    (directory / RELEASED_CONFIG).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return directory
