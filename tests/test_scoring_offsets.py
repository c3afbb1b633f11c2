"""Character offsets of scored tokens and words, checked against the text itself: emoji,
CJK, combining marks, ligatures and leading spaces, with a byte-level BPE tokenizer (the
tests' own), a SentencePiece-style one that normalises (NFKC) and falls back to bytes,
and SmolLM2's."""

from __future__ import annotations

import unicodedata

import pytest

from sigmoid_head.evaluation.spans import SpanConfig, add_errors
from sigmoid_head.scoring.decoding import DecodingConfig
from sigmoid_head.scoring.force_decode import score_records
from sigmoid_head.scoring.generate import generate_and_score
from sigmoid_head.scoring.offsets import char_map, decoded_pieces, token_offsets

TEXTS = [
    "  Hello wörld 🐱 我爱猫!",
    "e\u0301te\u0301 café",  # combining acute accents
    "🐱🐶 x  y",
    " leading and trailing ",
    "日本語のテキスト、です。",
    "👩‍👩‍👧 family",  # a zero-width-joiner sequence
]


@pytest.fixture(scope="module")
def sentencepiece_like():
    """A Metaspace BPE with NFKC normalisation and byte fallback, like Llama/Marian models."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True))
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = decoders.Sequence([decoders.ByteFallback(),
                                     decoders.Metaspace(replacement="▁", prepend_scheme="always")])
    special = ["<unk>", "</s>"] + [f"<0x{i:02X}>" for i in range(256)]
    tok.train_from_iterator(["the dog sees the cat", "café au lait", "hello world"] * 20,
                            trainers.BpeTrainer(vocab_size=400, special_tokens=special,
                                                show_progress=False))
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", eos_token="</s>")


def _check(tok, text: str, specials=frozenset()) -> list[tuple[int, int]]:
    """Offsets of ``text``'s tokens (+ EOS), with the properties every tokenizer must give."""
    ids = tok(text, add_special_tokens=False)["input_ids"]
    eos = getattr(tok, "eos_token_id", None)
    ids = ids + ([eos] if eos is not None else [])
    offs = token_offsets(tok, text, ids, specials | ({eos} if eos is not None else set()))
    assert len(offs) == len(ids)
    assert all(0 <= a <= b <= len(text) for a, b in offs)
    assert [a for a, _ in offs] == sorted(a for a, _ in offs)  # never runs backwards
    assert offs[-1] == (offs[-2][1], offs[-2][1])  # EOS: empty, after the text
    for i, (a, b) in zip(ids, offs, strict=True):
        piece = tok.decode([i], clean_up_tokenization_spaces=False)
        if i != eos and piece.strip() and "\ufffd" not in piece:  # a whole-character token
            # equal, or inside one character that normalises to several ("ﬁ" -> "f" "i")
            assert piece.strip().replace("▁", "") in unicodedata.normalize("NFKC", text[a:b])
    covered = {k for a, b in offs for k in range(a, b)}
    assert all(text[k].isspace() for k in range(len(text)) if k not in covered)
    return offs


@pytest.mark.parametrize("text", TEXTS)
def test_byte_level_offsets_tile_the_text(tiny_tokenizer, text) -> None:
    offs = _check(tiny_tokenizer, text)
    # byte-level BPE spells the text exactly: the distinct spans tile it end to end
    distinct = sorted(set(offs[:-1]))
    assert distinct[0][0] == 0 and distinct[-1][1] == len(text)
    assert all(x[1] == y[0] for x, y in zip(distinct, distinct[1:], strict=False))


def test_pieces_of_one_character_share_it(tiny_tokenizer) -> None:
    text = "🐱 x"
    ids = tiny_tokenizer(text, add_special_tokens=False)["input_ids"]
    offs = token_offsets(tiny_tokenizer, text, ids)
    emoji = [o for o in offs if o == (0, 1)]
    assert len(emoji) >= 2  # the emoji's 4 bytes take several tokens, all on its character
    assert offs[-1][1] == len(text)


@pytest.mark.parametrize("text", [*TEXTS, "ﬁne x²", "the  dog"])
def test_normalising_tokenizer_maps_back_to_the_given_text(sentencepiece_like, text) -> None:
    _check(sentencepiece_like, text)


def test_combining_marks_and_leading_spaces_point_into_the_original(sentencepiece_like) -> None:
    text = "  e\u0301te\u0301 café"
    ids = sentencepiece_like(text, add_special_tokens=False)["input_ids"]
    decoded, _ = decoded_pieces(sentencepiece_like, ids)
    assert decoded != text  # composed, leading spaces dropped: offsets must be mapped
    offs = token_offsets(sentencepiece_like, text, ids)
    pieces = sentencepiece_like.convert_ids_to_tokens(ids)
    assert pieces[:2] == ["▁", "▁"]  # one of them is dropped by the decoder
    assert all(text[a:b] in ("", " ") for a, b in offs[:2])
    assert offs[2][0] == 2  # the word starts after both spaces
    assert {text[a:b] for a, b in offs} >= {"e\u0301", " café"}


def test_char_map_of_equal_and_changed_stretches() -> None:
    first, last, at = char_map("abc", "abc")
    assert (first, last, at) == ([0, 1, 2], [1, 2, 3], [0, 1, 2, 3])
    first, last, _ = char_map("é!", "e\u0301!")
    assert (first[0], last[0], first[1], last[1]) == (0, 2, 2, 3)


@pytest.mark.integration
@pytest.mark.parametrize("text", TEXTS)
def test_smollm2_tokenizer_offsets(text) -> None:
    from transformers import AutoTokenizer

    from sigmoid_head.embedded.default_model import default_model_path

    tok = AutoTokenizer.from_pretrained(default_model_path(progress=False))
    offs = _check(tok, text)
    distinct = sorted(set(offs[:-1]))
    assert "".join(text[a:b] for a, b in distinct) == text


def _check_record(rec: dict, text: str) -> None:
    assert all("start" in t and "end" in t for t in rec["tokens"])
    for w in rec["words"]:
        assert text[w["start"]:w["end"]] == w["word"]


def test_score_records_carry_offsets_and_errors_use_them(causal) -> None:
    texts = ["  the dog 🐱 eats", "la casa 我爱猫 grande", "e\u0301te\u0301 café"]
    recs = [{"source": "el perro", "candidate": t} for t in texts]
    rows = score_records(causal, recs, with_tokens=True, progress=False)
    for row, text in zip(rows, texts, strict=True):
        _check_record(row, text)
        row["candidate"] = text
    add_errors(rows, SpanConfig(method="sigmoid", threshold=1.0))  # every word an error
    for row, text in zip(rows, texts, strict=True):
        words = row["words"]
        assert [(e["start"], e["end"]) for e in row["errors"]] == [
            (words[0]["start"], words[-1]["end"])]
        assert row["errors"][0]["text"] == text[words[0]["start"]:words[-1]["end"]]


def test_generated_records_carry_offsets_into_the_candidate(causal) -> None:
    rows = generate_and_score(causal, ["el perro", "la casa"], DecodingConfig(max_new_tokens=6),
                              with_tokens=True, progress=False)
    for r in rows:
        _check_record(r, r["candidate"])
