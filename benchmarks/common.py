"""Shared set-up of the benchmarks: the embedded SmolLM2-135M, real Bible batches, timing.

``--model`` swaps in a randomly initialised model of another size (no download): the
SmolLM2-135M shape itself (``smollm2-random``: a machine without the embedded weights, such
as a lent GPU), the OLMo-2-1B and OLMo-2-7B shapes (vocabulary 100,352), or a tiny one for
dry runs; the embedded tokenizer and data serve them all (its ids are all inside their
vocabularies). ``$SIGMOID_HEAD_BENCH_TOKENIZER`` names a folder holding that tokenizer's
files instead (the embedded model's ``tokenizer*.json``), where the embedded model cannot be
built. ``--device`` / ``--dtype`` place it; on CUDA every timed call ends with a
synchronize. ``--compile default`` runs the frozen body through ``torch.compile`` (dynamic
shapes: one compilation serves every batch length). ``--compile reduce-overhead`` is
refused in one line before anything loads (:data:`COMPILE_REFUSED`): CUDA graphs are
recorded once per input shape, and these batches vary in length, so its warm-up has no
bound (at the 1B shape it had not finished after 120 s, issue 60).

Every benchmark measures its variants side by side in one process run: the variants
are interleaved, repeated, and the median of each is reported, so that the ratios stay
meaningful on a machine whose cores are shared with other work. Absolute figures from
different runs are not comparable; the ratios are what the benchmarks are for.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "src" / "sigmoid_head" / "bible_sample" / "para_train.jsonl.gz"
PROMPT = "Rewrite this verse in modern English:\n{source}"
MAX_LENGTH = 192


COMPILE_REFUSED = {
    "reduce-overhead": "refused: CUDA graphs are recorded once per input shape and these "
                       "batches vary in length, so the warm-up has no bound (issue 60); "
                       "use --compile default",
}
"""``--compile`` modes refused, with their one-line reason."""


class _CompileMode(argparse.Action):
    """``--compile``: a refused mode ends the run at parsing, in one line, before any model loads."""

    def __call__(self, parser, namespace, value, option_string=None) -> None:  # noqa: ANN001
        if value in COMPILE_REFUSED:
            raise SystemExit(f"--compile {value}: {COMPILE_REFUSED[value]}")
        setattr(namespace, self.dest, value)


def parser(doc: str) -> argparse.ArgumentParser:
    """An argument parser with the options every benchmark shares."""
    p = argparse.ArgumentParser(description=doc.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="few batches and repeats (a smoke run)")
    p.add_argument("--threads", type=int, default=0,
                   help="torch.set_num_threads (0 = torch's default)")
    p.add_argument("--repeats", type=int, default=3, help="interleaved repetitions per variant")
    p.add_argument("--batches", type=int, default=6, help="micro-batches per timed pass")
    p.add_argument("--batch-size", type=int, default=16, help="sequences per micro-batch")
    p.add_argument("--model", choices=("smollm2", *SIZES), default="smollm2",
                   help="the embedded SmolLM2-135M, or a random-init model of this size")
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--dtype", default="auto", help="auto (bfloat16 on CUDA), float32, bfloat16")
    p.add_argument("--examples", type=int, default=0,
                   help="tokenize only the first N training examples (0 = all; dry runs)")
    p.add_argument("--compile", choices=("none", "default", *COMPILE_REFUSED), default="none",
                   action=_CompileMode,
                   help="torch.compile the frozen body with dynamic shapes (reduce-overhead: "
                        "refused, its CUDA-graph warm-up is unbounded here)")
    return p


SIZES = {
    "smollm2-random": dict(arch="llama", hidden_size=576, intermediate_size=1536,
                           num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
                           head_dim=64, vocab_size=49152, tie_word_embeddings=True,
                           rope_theta=100000.0, rms_norm_eps=1e-5),
    "olmo2-1b": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                     num_attention_heads=16, num_key_value_heads=16, vocab_size=100352),
    "olmo2-7b": dict(hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                     num_attention_heads=32, num_key_value_heads=32, vocab_size=100352),
    "tiny": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=4, vocab_size=49152),
}
"""Random-init shapes (SmolLM2-135M-Instruct's own config, the OLMo-2-0425-1B and
OLMo-2-1124-7B configs; a tiny one for dry runs). ``arch`` defaults to OLMo-2."""


def torch_dtype(args: argparse.Namespace) -> torch.dtype:
    if args.dtype == "auto":
        return torch.bfloat16 if args.device.startswith("cuda") else torch.float32
    return getattr(torch, args.dtype)


def backbone_for(args: argparse.Namespace):
    """The embedded SmolLM2 (``--model smollm2``) or a random-init OLMo-2-style model."""
    from transformers import (
        AutoTokenizer,
        LlamaConfig,
        LlamaForCausalLM,
        Olmo2Config,
        Olmo2ForCausalLM,
    )

    from sigmoid_head import load_backbone
    from sigmoid_head.lm.backbone import Backbone, freeze

    if args.model == "smollm2":
        return compiled(load_backbone(None, device=args.device, dtype=torch_dtype(args)), args)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir())
    shape = dict(SIZES[args.model])
    arch = shape.pop("arch", "olmo2")
    config_cls, model_cls = ((LlamaConfig, LlamaForCausalLM) if arch == "llama"
                             else (Olmo2Config, Olmo2ForCausalLM))
    shape.setdefault("tie_word_embeddings", False)
    config = config_cls(**shape, max_position_embeddings=4096,
                        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
                        bos_token_id=tokenizer.bos_token_id)
    torch.manual_seed(0)
    with torch.device(args.device):  # initialise in place: a 7B model never visits the CPU
        model = model_cls(config).to(torch_dtype(args))
    return compiled(Backbone(freeze(model), tokenizer, name_or_path=f"random-init-{args.model}"),
                    args)


def tokenizer_dir() -> str:
    """The tokenizer of the random-init models: ``$SIGMOID_HEAD_BENCH_TOKENIZER`` when set,
    else the embedded SmolLM2's (built on first use)."""
    import os

    from sigmoid_head.embedded.default_model import default_model_path

    return os.environ.get("SIGMOID_HEAD_BENCH_TOKENIZER") or str(default_model_path(progress=False))


def compiled(backbone, args: argparse.Namespace):
    """``backbone`` with its frozen body (the decoder stack, not the output layer whose input
    the library hooks) compiled in place when ``--compile`` asks (dynamic shapes: batches
    differ in length)."""
    mode = getattr(args, "compile", "none")
    if mode == "none":
        return backbone
    body = backbone.model.get_decoder() if hasattr(backbone.model, "get_decoder") else None
    if body is None:
        raise SystemExit(f"--compile: {backbone.name_or_path} has no decoder stack to compile")
    body.compile(mode=mode, dynamic=True)
    return backbone


def to_device(batch: dict[str, torch.Tensor], device: str) -> dict[str, torch.Tensor]:
    return {k: v.to(device) for k, v in batch.items()}


def sync(device: str) -> None:
    """Wait for the device's queued work (a no-op on CPU), so wall times are honest."""
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def setup_threads(args: argparse.Namespace) -> None:
    if args.threads:
        torch.set_num_threads(args.threads)


def load(n_examples: int | None = None, args: argparse.Namespace | None = None):
    """(backbone, examples): the model (see :func:`backbone_for`) and tokenized KJV -> WEB
    chat examples."""
    from sigmoid_head import load_backbone
    from sigmoid_head.data.records import read_records
    from sigmoid_head.data.tokenize import tokenize_records

    backbone = backbone_for(args) if args is not None else load_backbone(None, device="cpu")
    if args is not None and args.examples:
        n_examples = min(n_examples or args.examples, args.examples)
    records = read_records(DATA)[:n_examples] if n_examples else read_records(DATA)
    examples, _ = tokenize_records(records, backbone.tokenizer, is_encoder_decoder=False,
                                   use_chat_template=True, prompt_template=PROMPT,
                                   max_length=MAX_LENGTH)
    return backbone, examples


def fixed_batches(examples: list[dict], n_batches: int, batch_size: int, seed: int = 0
                  ) -> list[list[int]]:
    """The first ``n_batches`` length-bucketed training micro-batches (as train.py builds them)."""
    from sigmoid_head.data.batching import example_length, make_batches

    lengths = [example_length(e) for e in examples]
    return make_batches(lengths, batch_size=batch_size, shuffle=True, seed=seed)[:n_batches]


def interleaved(variants: dict[str, Callable[[], object]], repeats: int, warmup: bool = True,
                device: str = "cpu") -> dict[str, list[float]]:
    """Wall time of each variant, run in turn ``repeats`` times (after one untimed warm-up)."""
    if warmup:
        for fn in variants.values():
            fn()
    times: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(repeats):
        for name, fn in variants.items():
            sync(device)
            t0 = time.perf_counter()
            fn()
            sync(device)
            times[name].append(time.perf_counter() - t0)
    return times


def interleaved_items(variants: dict[str, Callable[[int], object]], n_items: int, repeats: int,
                      device: str = "cpu") -> dict[str, list[float]]:
    """Per-repeat total wall time of each variant, interleaved at the finest grain.

    Each variant is a function of an item (a batch) index; for every item all variants
    run back to back, in an order that rotates from item to item, so that they all see
    the same load on a shared machine. One untimed warm-up pass over item 0 first.
    """
    names = list(variants)
    for name in names:
        variants[name](0)
    totals: dict[str, list[float]] = {k: [] for k in names}
    for rep in range(repeats):
        acc = dict.fromkeys(names, 0.0)
        for i in range(n_items):
            shift = (rep * n_items + i) % len(names)
            for name in names[shift:] + names[:shift]:
                sync(device)
                t0 = time.perf_counter()
                variants[name](i)
                sync(device)
                acc[name] += time.perf_counter() - t0
        for name in names:
            totals[name].append(acc[name])
    return totals


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS mark (Linux ``clear_refs``); False where not allowed."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def peak_rss_mib() -> float:
    """Peak resident set size since the last reset (or process start), MiB."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def memory_mib() -> dict[str, float]:
    """This process's memory now, MiB (Linux ``/proc/self/status``): ``rss`` (VmRSS),
    ``anon`` (RssAnon: private memory), ``file`` (RssFile: resident pages of mapped files,
    shared libraries included), ``hwm`` (VmHWM, the kernel's peak of ``rss``)."""
    names = {"VmRSS": "rss", "RssAnon": "anon", "RssFile": "file", "VmHWM": "hwm"}
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in names:
            out[names[key]] = int(value.split()[0]) / 1024
    return out


class MemoryPeaks:
    """Peaks of :func:`memory_mib`'s ``anon`` and ``file``, sampled every ``every`` seconds
    by a thread (the kernel keeps a peak of their sum only, VmHWM)."""

    def __init__(self, every: float = 0.02) -> None:
        import threading

        self.every, self.peak = every, {"anon": 0.0, "file": 0.0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            time.sleep(self.every)

    def sample(self) -> None:
        now = memory_mib()
        for k in self.peak:
            self.peak[k] = max(self.peak[k], now[k])

    def reset(self) -> None:
        self.sample()
        self.peak = {k: 0.0 for k in self.peak}
        self.sample()

    def stop(self) -> dict[str, float]:
        self._stop.set()
        self._thread.join()
        self.sample()
        return dict(self.peak)


def mapped_files_mib(suffix: str) -> dict[str, float]:
    """Resident and dirty MiB of this process's mappings of files ending in ``suffix``
    (``/proc/self/smaps``): clean pages of a file mapping are page cache the kernel can
    drop and read again."""
    rss = dirty = 0
    current = False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()
        if head and not head[0].endswith(":"):  # a mapping's header line
            current = len(head) >= 6 and head[-1].endswith(suffix)
        elif current and head[0] == "Rss:":
            rss += int(head[1])
        elif current and head[0] in ("Shared_Dirty:", "Private_Dirty:"):
            dirty += int(head[1])
    return {"rss": rss / 1024, "dirty": dirty / 1024}


def header(args: argparse.Namespace, extra: str = "") -> None:
    where = args.device
    if args.device.startswith("cuda"):
        where += f" ({torch.cuda.get_device_name()})"
    print(f"model={args.model} device={where} dtype={torch_dtype(args)} "
          f"threads={torch.get_num_threads()} torch={torch.__version__} quick={args.quick} "
          f"repeats={args.repeats} compile={getattr(args, 'compile', 'none')} {extra}".rstrip(),
          flush=True)


def add_generation_model_options(p: argparse.ArgumentParser) -> None:
    """``--mt-model`` / ``--head``: the options of the generation benchmarks' model."""
    p.add_argument("--mt-model", help="an encoder-decoder model folder (Spanish sources)")
    p.add_argument("--head", help="a trained head folder (default: an untrained head)")


def generation_model_and_sources(args: argparse.Namespace):
    """(SigmoidHeadModel, sources) of a generation benchmark: ``--mt-model`` (an
    encoder-decoder, the Bible sample's Spanish MT test verses) or the ``--model`` of
    :func:`backbone_for` (KJV verses); the head ``--head`` or an untrained one (a copy of the
    LM head); ``args.batches * args.batch_size`` sources."""
    import gzip
    import json

    from sigmoid_head import load_backbone
    from sigmoid_head.head.model import SigmoidHeadModel

    if args.mt_model:
        backbone = load_backbone(args.mt_model, device=args.device, dtype=torch_dtype(args))
        args.model = f"mt:{Path(args.mt_model).name}"
    else:
        backbone = backbone_for(args)
    model = (SigmoidHeadModel.from_pretrained(backbone, args.head) if args.head
             else SigmoidHeadModel.from_base(backbone))
    data = DATA.with_name("mt_test.jsonl.gz") if backbone.is_encoder_decoder else DATA
    with gzip.open(data, "rt") as f:
        sources = [json.loads(line)["source"]
                   for _, line in zip(range(args.batches * args.batch_size), f, strict=False)]
    return model, sources
