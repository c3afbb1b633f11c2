"""Offline tiny fixtures shared by the whole test suite.

Everything here is built in-process from text generated in code: no network, no
downloads. The whole session setup takes a few seconds.

Tokenizer conventions (every tiny model uses the same tokenizer):

* byte-level BPE, vocabulary ~1,000, special tokens ``<pad>`` (id 0), ``<s>`` (1),
  ``</s>`` (2), ``<unk>`` (3), ``<|im_start|>`` (4), ``<|im_end|>`` (5);
* ``tokenizer(text)`` always prepends ``<s>`` and appends nothing (Llama style);
  ``tokenizer(text, add_special_tokens=False)`` adds nothing;
* a ChatML chat template like SmolLM2's (without its default system prompt):
  ``<|im_start|>{role}\\n{content}<|im_end|>\\n`` per message, generation prompt
  ``<|im_start|>assistant\\n``; the template adds no ``<s>``.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

SPECIAL_TOKENS = ["<pad>", "<s>", "</s>", "<unk>", "<|im_start|>", "<|im_end|>"]

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

# Spanish-ish source word -> English-ish target words. Some words have two valid
# translations, which gives the tiny pairs data set real ambiguity.
LEXICON: dict[str, list[str]] = {
    "el": ["the"],
    "la": ["the"],
    "un": ["a"],
    "una": ["a"],
    "perro": ["dog"],
    "gato": ["cat"],
    "casa": ["house", "home"],
    "niño": ["boy", "child"],
    "mujer": ["woman"],
    "hombre": ["man"],
    "libro": ["book"],
    "agua": ["water"],
    "pan": ["bread"],
    "ciudad": ["city", "town"],
    "come": ["eats"],
    "ve": ["sees"],
    "lee": ["reads"],
    "bebe": ["drinks"],
    "ama": ["loves", "likes"],
    "grande": ["big", "large"],
    "pequeño": ["small", "little"],
    "rojo": ["red"],
    "viejo": ["old"],
    "nuevo": ["new"],
    "hoy": ["today"],
    "ahora": ["now"],
    "aquí": ["here"],
}
SUBJECTS = ["el perro", "el gato", "la mujer", "el hombre", "el niño", "un perro", "una mujer"]
VERBS = ["come", "ve", "lee", "bebe", "ama"]
OBJECTS = ["el pan", "el agua", "un libro", "la casa", "la ciudad", "el libro", "un gato"]
ADVERBS = ["", "hoy", "ahora", "aquí"]
ADJECTIVES = ["", "grande", "pequeño", "rojo", "viejo", "nuevo"]

ENGLISH_FILLER = [
    "The quick brown fox jumps over the lazy dog.",
    "Language models assign a probability to every token in the vocabulary.",
    "A sigmoid head scores each token independently of the others.",
    "Quality estimation predicts how good a translation is without a reference.",
    "Please rewrite this sentence in modern English.",
    "What is the capital of France? The capital of France is Paris.",
    "She sells sea shells by the sea shore, and he reads a book at home.",
    "Numbers like 1, 2, 3, 42 and 2024 appear in text too.",
]
SPANISH_FILLER = [
    "El rápido zorro marrón salta sobre el perro perezoso.",
    "¿Dónde está la biblioteca? Está al lado de la estación.",
    "Mañana vamos a la playa con nuestros amigos.",
    "La traducción automática ha mejorado mucho en los últimos años.",
    "En el principio creó Dios los cielos y la tierra.",
    "Los estudiantes escriben cartas largas a sus familias cada semana.",
    "Necesito comprar leche, huevos, queso y manzanas en el mercado.",
    "El tren de la mañana llega tarde porque llueve mucho.",
    "Mi hermana trabaja en un hospital cerca del río.",
]
# Extra vocabulary so that the BPE trainer reaches ~1,000 tokens.
WORD_TEXT = (
    "about after again always animal answer around because before between black blue "
    "bring brother build called change children close country different during early "
    "earth enough every example family father follow found friend garden green group "
    "happen important inside journey kitchen letter light little morning mother mountain "
    "music never number often people picture place question river school second should "
    "something sometimes story student teacher thought through together under until water "
    "weather window without world write year young yellow "
    "abrir ahora amigo árbol aprender ayer bailar bosque buscar caballo cambiar camino "
    "cantar cerca cielo ciudad cocina comer comprar conocer correr cuando decir dentro "
    "derecho después dinero donde dormir escuela escribir esperar estrella familia fuego "
    "hablar hermano hijo historia invierno jardín jugar lejos libre llegar lluvia luna "
    "madre mañana mercado montaña mundo música noche nuevo nunca padre palabra pequeño "
    "pensar pregunta primero pueblo puerta querer recordar siempre tiempo trabajo verano"
)


ADJ_SET = {a for a in ADJECTIVES if a}


def _translate(sentence: str, rng: random.Random) -> str:
    """Translate a generated Spanish-ish sentence word by word; adjectives move before nouns."""
    words = sentence.split()
    out: list[str] = []
    i = 0
    while i < len(words):
        if i + 2 < len(words) and words[i + 2] in ADJ_SET:
            # "el perro grande" -> "the big dog"
            det, noun, adj = words[i : i + 3]
            out += [rng.choice(LEXICON[w]) for w in (det, adj, noun)]
            i += 3
        else:
            out.append(rng.choice(LEXICON[words[i]]))
            i += 1
    return " ".join(out)


def make_pairs(n: int = 200, seed: int = 0) -> list[dict[str, str]]:
    """Generate ``n`` synthetic source/target pairs with a learnable word mapping.

    Every 10th pair repeats the previous pair's source with a different valid
    translation when the source has an ambiguous word, so some sources have two targets.
    """
    rng = random.Random(seed)
    pairs: list[dict[str, str]] = []
    for i in range(n):
        if i % 10 == 9:
            source = pairs[-1]["source"]
            targets = {_translate(source, rng) for _ in range(20)} - {pairs[-1]["target"]}
            if targets:
                pairs.append({"source": source, "target": sorted(targets)[0]})
                continue
        subj = rng.choice(SUBJECTS)
        adj = rng.choice(ADJECTIVES)
        if adj:
            subj = f"{subj} {adj}"
        parts = [subj, rng.choice(VERBS), rng.choice(OBJECTS), rng.choice(ADVERBS)]
        source = " ".join(p for p in parts if p)
        pairs.append({"source": source, "target": _translate(source, rng)})
    return pairs


def make_chats(n: int = 50, seed: int = 0) -> list[dict]:
    """Generate ``n`` short chats (some with a system message, some multi-turn)."""
    rng = random.Random(seed)
    pairs = make_pairs(2 * n, seed=seed + 1)
    chats = []
    for i in range(n):
        messages: list[dict[str, str]] = []
        if i % 3 == 0:
            messages.append({"role": "system", "content": "You translate Spanish to English."})
        for turn in range(1 + (i % 2)):
            pair = pairs[2 * i + turn]
            messages.append({"role": "user", "content": f"Translate: {pair['source']}"})
            messages.append({"role": "assistant", "content": pair["target"]})
        if rng.random() < 0.1:
            messages.append({"role": "user", "content": "Thanks!"})
        chats.append({"messages": messages})
    return chats


def make_texts(n: int = 60, seed: int = 0) -> list[str]:
    """Generate ``n`` lines of plain English/Spanish text."""
    rng = random.Random(seed)
    pairs = make_pairs(n, seed=seed + 2)
    lines = []
    for i, pair in enumerate(pairs):
        filler = rng.choice(ENGLISH_FILLER + SPANISH_FILLER)
        lines.append(f"{pair['target'].capitalize()}. {filler}" if i % 2 else pair["source"])
    return lines


def _training_corpus() -> list[str]:
    """A few hundred lines of English/Spanish text for training the tiny tokenizer."""
    rng = random.Random(7)
    lines = list(ENGLISH_FILLER + SPANISH_FILLER) * 3
    for _ in range(200):
        lines.append(" ".join(rng.choices(WORD_TEXT.split(), k=8)).capitalize() + ".")
    for pair in make_pairs(300, seed=123):
        lines += [pair["source"], pair["target"]]
    lines += ["Translate: system user assistant", "You translate Spanish to English. Thanks!"]
    return lines


def build_tiny_tokenizer(out_dir: Path):
    """Train the tiny byte-level BPE tokenizer and save it (HF format) to ``out_dir``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=1000,
        min_frequency=1,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_training_corpus(), trainer=trainer)
    bos_id = tok.token_to_id("<s>")
    tok.post_processor = processors.Sequence(
        [
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(
                single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", bos_id)]
            ),
        ]
    )
    hf_tok = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        additional_special_tokens=["<|im_start|>", "<|im_end|>"],
    )
    hf_tok.chat_template = CHAT_TEMPLATE
    hf_tok.save_pretrained(out_dir)
    return hf_tok


def make_train_config(model_path, data, out, **kw):
    """The tests' small training run on CPU (lr 3e-2, 16 sequences a batch, 4 epochs,
    validation every 10 steps on 15% held out, no early stopping, checkpoint/ and best/
    kept, which many tests inspect after a run); ``kw`` overrides."""
    from sigmoid_head.training.config import TrainConfig

    base = dict(train_file=str(data), output_dir=str(out), model=str(model_path), lr=3e-2,
                batch_size=16, epochs=4, eval_every=10, patience=0, progress=False,
                validation_fraction=0.15, seed=0, device="cpu", keep_checkpoints=True)
    return TrainConfig(**{**base, **kw})


def read_train_history(out) -> list[dict]:
    """The validation history saved with the head trained into ``out``."""
    return json.loads((Path(out) / "head_config.json").read_text())["training"]["history"]


@pytest.fixture(scope="session")
def train_config():
    """:func:`make_train_config` (a fixture: ``from conftest import`` is ambiguous in a
    full run, where tests/recipes has a conftest too)."""
    return make_train_config


@pytest.fixture(scope="session")
def train_history():
    """:func:`read_train_history`."""
    return read_train_history


@pytest.fixture(scope="session")
def pairs_maker():
    """:func:`make_pairs`."""
    return make_pairs


def _write_jsonl(path: Path, records: list[dict]) -> Path:
    with path.open("w", encoding="utf-8") as f:
        for rec in records:
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    return path


@pytest.fixture(scope="session")
def tiny_tokenizer_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Directory holding the tiny fast tokenizer (see the module docstring)."""
    out = tmp_path_factory.mktemp("tiny_tokenizer")
    build_tiny_tokenizer(out)
    return out


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_tokenizer_path: Path):
    """The tiny tokenizer, loaded with ``AutoTokenizer``."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_tokenizer_path)


def _save_with_tokenizer(model, tokenizer, name: str, factory: pytest.TempPathFactory) -> Path:
    out = factory.mktemp(name)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def build_tiny_causal(tokenizer):
    """A random tiny ``LlamaForCausalLM`` (hidden 32, 2 layers, tied embeddings), seed 0."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return LlamaForCausalLM(config).eval()


@pytest.fixture(scope="session")
def tiny_causal_path(tiny_tokenizer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random tiny ``LlamaForCausalLM`` (hidden 32, 2 layers, tied embeddings) + tokenizer."""
    return _save_with_tokenizer(build_tiny_causal(tiny_tokenizer), tiny_tokenizer, "tiny_causal",
                                tmp_path_factory)


@pytest.fixture(scope="session")
def tiny_seq2seq_path(tiny_tokenizer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random tiny ``MarianMTModel`` (d_model 32, 2+2 layers) + tokenizer.

    As in Marian, ``decoder_start_token_id`` is the pad id.
    """
    import torch
    from transformers import MarianConfig, MarianMTModel

    torch.manual_seed(0)
    pad, eos = tiny_tokenizer.pad_token_id, tiny_tokenizer.eos_token_id
    config = MarianConfig(
        vocab_size=len(tiny_tokenizer),
        decoder_vocab_size=len(tiny_tokenizer),
        d_model=32,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_position_embeddings=256,
        pad_token_id=pad,
        eos_token_id=eos,
        forced_eos_token_id=eos,
        decoder_start_token_id=pad,
        bos_token_id=tiny_tokenizer.bos_token_id,
    )
    model = MarianMTModel(config).eval()
    return _save_with_tokenizer(model, tiny_tokenizer, "tiny_marian", tmp_path_factory)


@pytest.fixture(scope="session")
def tiny_t5_path(tiny_tokenizer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random tiny ``T5ForConditionalGeneration`` with tied embeddings + tokenizer.

    ``tie_word_embeddings=True`` makes T5 scale the LM head input by ``d_model**-0.5``
    (transformers 5 records this as ``config.scale_decoder_outputs=True``).
    """
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(0)
    pad = tiny_tokenizer.pad_token_id
    config = T5Config(
        vocab_size=len(tiny_tokenizer),
        d_model=32,
        d_kv=8,
        d_ff=64,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=4,
        tie_word_embeddings=True,
        pad_token_id=pad,
        eos_token_id=tiny_tokenizer.eos_token_id,
        decoder_start_token_id=pad,
    )
    model = T5ForConditionalGeneration(config).eval()
    return _save_with_tokenizer(model, tiny_tokenizer, "tiny_t5", tmp_path_factory)


@pytest.fixture(scope="session")
def tiny_gpt2_path(tiny_tokenizer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random tiny ``GPT2LMHeadModel`` (n_embd 32, 2 layers, 4 heads) + tokenizer."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=len(tiny_tokenizer),
        n_embd=32,
        n_layer=2,
        n_head=4,
        n_positions=256,
        bos_token_id=tiny_tokenizer.bos_token_id,
        eos_token_id=tiny_tokenizer.eos_token_id,
        pad_token_id=tiny_tokenizer.pad_token_id,
    )
    model = GPT2LMHeadModel(config).eval()
    return _save_with_tokenizer(model, tiny_tokenizer, "tiny_gpt2", tmp_path_factory)


@pytest.fixture(scope="session")
def tiny_pairs_jsonl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """JSONL with 200 ``{"source", "target"}`` pairs (Spanish-ish -> English-ish).

    Word-by-word mapping with adjectives moved before nouns; some source words have
    two valid translations (casa -> house/home, niño -> boy/child, ...).
    """
    out = tmp_path_factory.mktemp("data") / "pairs.jsonl"
    return _write_jsonl(out, make_pairs(200))


@pytest.fixture(scope="session")
def tiny_chat_jsonl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """JSONL with 50 ``{"messages": [...]}`` chats (system messages, 1-2 turns)."""
    out = tmp_path_factory.mktemp("data") / "chats.jsonl"
    return _write_jsonl(out, make_chats(50))


@pytest.fixture(scope="session")
def tiny_text_txt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Plain text file, one document per line (60 lines)."""
    out = tmp_path_factory.mktemp("data") / "text.txt"
    out.write_text("\n".join(make_texts(60)) + "\n", encoding="utf-8")
    return out


@pytest.fixture(scope="session")
def perturbed_model():
    """``perturbed_model(path, seed=1)``: a model whose head is the LM head plus noise, so
    sigmoid and softmax scores differ."""
    import torch

    from sigmoid_head.head.model import SigmoidHeadModel
    from sigmoid_head.lm.backbone import load_backbone

    def make(path: Path, seed: int = 1) -> SigmoidHeadModel:
        model = SigmoidHeadModel.from_base(load_backbone(str(path), device="cpu"))
        gen = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            model.head.weight.add_(0.2 * torch.randn(model.head.weight.shape, generator=gen))
        return model

    return make


# ------------------------------------------------------------------ shared scoring fixtures

SCORED_PAIRS = (
    ["el perro come el pan", "la casa", "el niño grande lee un libro hoy", "una mujer"],
    ["the dog eats the bread", "the house", "the big boy reads a book today", "a woman"],
)
CLI_PAIRS = (
    ["el perro come el pan", "la casa", "el niño lee un libro", "una mujer", "el gato"],
    ["the dog eats the bread", "the home", "the boy reads a book", "a woman", "a car"],
)


@pytest.fixture(scope="session")
def scored_pairs() -> tuple[list[str], list[str]]:
    """(sources, candidates) that the scoring tests force-decode."""
    return SCORED_PAIRS


@pytest.fixture(scope="session")
def causal(tiny_causal_path, perturbed_model):
    """The tiny causal model with a perturbed head (modules may override this fixture)."""
    return perturbed_model(tiny_causal_path)


@pytest.fixture(scope="session")
def seq2seq(tiny_seq2seq_path, perturbed_model):
    """The tiny seq2seq model with a perturbed head (modules may override this fixture)."""
    return perturbed_model(tiny_seq2seq_path)


@pytest.fixture(scope="session")
def candidate_examples(scored_pairs):
    """``candidate_examples(model)``: the scored pairs tokenized for that model."""
    from sigmoid_head.data.prompts import make_examples

    def make(model) -> list[dict]:
        records = [{"source": s, "candidate": c} for s, c in zip(*scored_pairs, strict=True)]
        return make_examples(records, model.tokenizer,
                             is_encoder_decoder=model.backbone.is_encoder_decoder)

    return make


@pytest.fixture(scope="session")
def cli_pairs() -> tuple[list[str], list[str]]:
    """(sources, candidates) of the CLI tests' text files."""
    return CLI_PAIRS


@pytest.fixture(scope="session")
def head_dir(tiny_causal_path, tmp_path_factory) -> Path:
    """An untrained head of the tiny causal model, saved."""
    from sigmoid_head.head.model import SigmoidHeadModel

    out = tmp_path_factory.mktemp("head")
    SigmoidHeadModel.from_base(str(tiny_causal_path), device="cpu").save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def texts(tmp_path_factory, cli_pairs) -> tuple[Path, Path]:
    """src.txt and mt.txt holding the CLI pairs, one per line."""
    d = tmp_path_factory.mktemp("texts")
    (d / "src.txt").write_text("\n".join(cli_pairs[0]) + "\n", encoding="utf-8")
    (d / "mt.txt").write_text("\n".join(cli_pairs[1]) + "\n", encoding="utf-8")
    return d / "src.txt", d / "mt.txt"


@pytest.fixture(
    params=[
        "cpu",
        pytest.param("cuda", marks=pytest.mark.skipif(
            not __import__("torch").cuda.is_available(), reason="no CUDA device")),
    ]
)
def device(request) -> str:
    """Every available device: "cpu" always, "cuda" when one is present (else skipped)."""
    return request.param


def _skip_unless_cpu_runs(dtype: str) -> None:
    from sigmoid_head.lm.cpu_precision import probe

    verdict = probe(dtype)
    if not verdict.ok:
        pytest.skip(f"this CPU cannot run {dtype} matrix products ({verdict.detail})")


@pytest.fixture(scope="session")
def skip_unless_cpu_runs():
    """``skip_unless_cpu_runs(dtype)`` skips the calling test, with the probe's reason, where
    this CPU cannot run ``dtype`` matrix products.

    The same child-process probe that guards the library (sigmoid_head.lm.cpu_precision): on a
    CPU that advertises bf16 matrix units it cannot run, a half-precision product would kill
    the whole test session with SIGILL.
    """
    return _skip_unless_cpu_runs


# --- which optional packages each test file touches (read by tests/check_extras.py) -------
#
# With SIGMOID_HEAD_RECORD_EXTRAS=FILE set, every `import` statement executed while the session
# runs is attributed to the innermost test file on the stack (collection and test bodies alike,
# library code called from a test included), and the names under the watched top levels are
# written to FILE as {test file: [module, ...]}. tests/check_extras.py then runs exactly those
# files again with each optional extra hidden, so a test that needs an extra without skipping
# when it is absent fails there.
_RECORD_TOPS = ("sigmoid_head", "lm_polygraph", "matplotlib", "mpl_toolkits", "sacrebleu",
                "comet", "pysword")
_recorded: dict[str, set[str]] = {}


def _install_import_recorder() -> None:
    import builtins
    import importlib.util
    import sys

    tests_dir = str(Path(__file__).resolve().parent)
    real_import = builtins.__import__

    depth = [0]

    def recording_import(name, globals=None, locals=None, fromlist=(), level=0):  # noqa: A002
        depth[0] += 1
        try:
            module = real_import(name, globals, locals, fromlist, level)
        finally:
            depth[0] -= 1
        if depth[0]:  # an import made while loading another module: the package's own business
            return module
        full = name
        if level:
            try:
                full = importlib.util.resolve_name("." * level + name,
                                                   (globals or {}).get("__package__"))
            except (ImportError, ValueError):
                return module
        if full.partition(".")[0] in _RECORD_TOPS:
            frame = sys._getframe(1)
            while frame is not None:  # the innermost test file on the stack (fixtures included)
                filename = frame.f_code.co_filename
                if filename.startswith(tests_dir) and Path(filename).name.startswith("test_"):
                    names = _recorded.setdefault(str(Path(filename).relative_to(tests_dir)), set())
                    if full.startswith("sigmoid_head"):
                        names.add(full)
                        names.update(f"{full}.{n}" for n in (fromlist or ()) if n != "*")
                    else:
                        names.add(full.partition(".")[0])
                    break
                frame = frame.f_back
        return module

    builtins.__import__ = recording_import


def pytest_configure(config) -> None:
    import os

    if os.environ.get("SIGMOID_HEAD_RECORD_EXTRAS"):
        _install_import_recorder()


def pytest_unconfigure(config) -> None:
    import os

    target = os.environ.get("SIGMOID_HEAD_RECORD_EXTRAS")
    if not target:
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER")  # under pytest-xdist (make test: -n 2)
    if worker:  # each worker its own part; the controller, which ends last, merges them
        if _recorded:
            Path(f"{target}.{worker}").write_text(
                json.dumps({k: sorted(v) for k, v in _recorded.items()}))
        return
    merged = {k: set(v) for k, v in _recorded.items()}
    for part in sorted(Path(target).parent.glob(f"{Path(target).name}.gw*")):
        for k, v in json.loads(part.read_text()).items():
            merged.setdefault(k, set()).update(v)
        part.unlink()
    if merged:
        Path(target).write_text(json.dumps({k: sorted(v) for k, v in sorted(merged.items())},
                                           indent=1))


SLOW_FIRST = (
    "test_wheel_demo.py", "recipes/test_bible_tables.py", "recipes/test_human_qe_tables.py",
    "test_gpu_bench.py", "test_embedded_default_model.py",
    "test_training_loop_distributed.py", "fuzz/test_round5_results.py", "test_scoring_distributed.py",
    "test_cli_quiet.py", "test_cli.py",
)
"""The test files that take longest here (``--durations``), longest first. ``make test`` runs
the files on two workers in collection order (``--no-loadscope-reorder``): starting with the
longest ones leaves short files to fill the end, instead of one worker running a long file
alone at the end (xdist's default order is by test count, which put these last). Only the
order changes; a file missing from the list runs after them, in its usual order."""


def pytest_collection_modifyitems(config, items) -> None:
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    tests_dir = Path(__file__).resolve().parent

    def key(item) -> int:
        try:
            rel = Path(str(item.path)).resolve().relative_to(tests_dir).as_posix()
        except ValueError:
            return len(rank)
        return rank.get(rel, len(rank))

    items.sort(key=key)  # stable: the order within a file and among the others is kept
