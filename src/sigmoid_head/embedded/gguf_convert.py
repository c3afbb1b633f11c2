"""GGUF -> plain Hugging Face checkpoint, for the embedded default model (see embedded.py).

transformers dequantises the GGUF file (float32); ``save_pretrained`` refuses a
GGUF-loaded model, so the weights are copied into a fresh ``LlamaForCausalLM``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path

logger = logging.getLogger(__name__)


class EmbeddedModelError(RuntimeError):
    """The embedded model could not be found, fetched or converted."""


@contextlib.contextmanager
def _quiet_progress(quiet: bool) -> Iterator[None]:
    """Silence transformers' progress bars (including the GGUF loader's own tqdm)."""
    if not quiet:
        yield
        return
    from functools import partial

    from transformers.utils import logging as hf_logging

    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    gguf_utils = sys.modules.get("transformers.modeling_gguf_pytorch_utils")
    if gguf_utils is None:
        with contextlib.suppress(ImportError):
            import transformers.modeling_gguf_pytorch_utils as gguf_utils
    original = getattr(gguf_utils, "tqdm", None)
    if original is not None:
        gguf_utils.tqdm = partial(original, disable=True)
    try:
        yield
    finally:
        if original is not None:
            gguf_utils.tqdm = original
        if was_enabled:
            hf_logging.enable_progress_bar()


@contextlib.contextmanager
def _parse_once() -> Iterator[None]:
    """Within the block, the GGUF file is parsed once and each tensor-name map built once.

    transformers reads the file three times to load one model and its tokenizer (config,
    tokenizer, weights; its 49,152-entry vocabulary parsed in Python each time) and builds
    the same tensor-name map for every module of the model (about 400 times). Both are pure
    functions of their arguments and only read afterwards, so the block hands back the first
    result: the same objects. ``pytest -s tests/test_embedded_default_model.py -k
    conversion_layout`` prints the conversion's time (on one core here, 2026-12-02: 17 s to 21 s with
    the block, 38 s without). Without the ``gguf`` package nothing changes (transformers then
    says it needs it)."""
    try:
        import gguf
    except ImportError:
        yield
        return
    reader, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    readers: dict = {}
    maps: dict = {}

    def shared_reader(path, *args, **kwargs):
        try:
            key = (os.fspath(path), args, tuple(sorted(kwargs.items())))
            hash(key)
        except TypeError:  # arguments this block cannot key on: read as transformers asked
            return reader(path, *args, **kwargs)
        if key not in readers:
            readers[key] = reader(path, *args, **kwargs)
        return readers[key]

    def shared_map(arch, n_blocks):
        if (arch, n_blocks) not in maps:
            maps[arch, n_blocks] = name_map(arch, n_blocks)
        return maps[arch, n_blocks]

    gguf.GGUFReader, gguf.get_tensor_name_map = shared_reader, shared_map
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = reader, name_map


def load_gguf(gguf_path: Path, progress: bool = False):
    """Load model and tokenizer from a GGUF file with transformers (dequantised, float32)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf_path = Path(gguf_path)
    with _quiet_progress(not progress), _parse_once():
        model = AutoModelForCausalLM.from_pretrained(
            str(gguf_path.parent), gguf_file=gguf_path.name, local_files_only=True
        )
        tokenizer = AutoTokenizer.from_pretrained(
            str(gguf_path.parent), gguf_file=gguf_path.name, local_files_only=True
        )
    model.eval()
    return model, tokenizer


def convert_gguf(gguf_path: Path, out_dir: Path, progress: bool = False) -> None:
    """Write a plain Hugging Face checkpoint of the GGUF model into ``out_dir``.

    ``save_pretrained`` refuses a GGUF-loaded model, so its weights are copied
    (strictly: every key must match) into a fresh ``LlamaForCausalLM`` built from
    the same config minus the quantisation entry.
    """
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    gguf_model, tokenizer = load_gguf(gguf_path, progress=progress)

    config_dict = gguf_model.config.to_dict()
    config_dict.pop("quantization_config", None)
    config = LlamaConfig.from_dict(config_dict)
    if not config.tie_word_embeddings:  # pragma: no cover - SmolLM2 ties them
        logger.warning("GGUF model does not tie its embeddings")

    plain = LlamaForCausalLM(config)
    # strict=True: every key of the GGUF model must land in the plain one and vice versa.
    result = plain.load_state_dict(gguf_model.state_dict(), strict=True)
    if result.missing_keys or result.unexpected_keys:  # pragma: no cover - strict raises
        raise EmbeddedModelError(f"weight copy mismatch: {result}")
    plain.tie_weights()
    plain.eval()

    eos_id = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else config.eos_token_id
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos_id
    bos_id = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else config.bos_token_id
    plain.config.eos_token_id = eos_id
    plain.config.pad_token_id = pad_id
    plain.config.bos_token_id = bos_id
    plain.generation_config = GenerationConfig(
        bos_token_id=bos_id, eos_token_id=eos_id, pad_token_id=pad_id
    )

    if not tokenizer.chat_template:
        raise EmbeddedModelError(f"{gguf_path.name} carries no chat template")
    tokenizer.model_max_length = int(config.max_position_embeddings)

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with _quiet_progress(not progress):
        plain.save_pretrained(str(out_dir))
        tokenizer.save_pretrained(str(out_dir))
    _tidy_tokenizer_config(out_dir / "tokenizer_config.json")
    _normalise_permissions(out_dir)
    del gguf_model, plain


def _normalise_permissions(directory: Path) -> None:
    """Give saved files the umask's usual mode (some writers create them 0600)."""
    mask = os.umask(0)
    os.umask(mask)
    for path in directory.iterdir():
        if path.is_file():
            with contextlib.suppress(OSError):
                path.chmod(0o666 & ~mask)


def _tidy_tokenizer_config(path: Path) -> None:
    """Name the generic fast tokenizer class and drop load-time-only keys.

    transformers 5 writes ``TokenizersBackend``; ``PreTrainedTokenizerFast`` is the
    same class there and is also understood by older transformers.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # pragma: no cover - save_pretrained just wrote it
        return
    if data.get("tokenizer_class") == "TokenizersBackend":
        data["tokenizer_class"] = "PreTrainedTokenizerFast"
    for key in ("is_local", "local_files_only"):
        data.pop(key, None)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
