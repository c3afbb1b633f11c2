"""How the head in this folder was made: run once with sigmoid-head 0.1.0 (commit d0a4003).

    PYTHONPATH=<a 0.1.0 checkout>/src python tests/data/head_v0_1_0/make_fixture.py

It writes ``base/`` (a random tiny Llama with the tests' tokenizer), ``head/`` (a head
trained for a few steps by 0.1.0's ``train`` and written by its ``save_pretrained``,
whose ``head_config.json`` holds the flat TrainConfig dict) and ``expected_scores.json``
(0.1.0's ``score_records`` on ``RECORDS``). ``tests/test_head_io.py`` loads the head
with the current code and checks the scores are unchanged. Not run by the test suite.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # tests/, for conftest's tokenizer builder

RECORDS = [
    {"source": "el perro come pan", "candidate": "the dog eats bread"},
    {"source": "la casa es grande", "candidate": "the house is big"},
    {"source": "el gato duerme", "candidate": "the cat is sleeping now"},
    {"messages": [{"role": "user", "content": "Translate: el sol"}], "candidate": "the sun"},
]


def main() -> None:
    import torch
    from conftest import build_tiny_tokenizer, make_pairs
    from transformers import LlamaConfig, LlamaForCausalLM

    from sigmoid_head import TrainConfig, train
    from sigmoid_head.scoring.force_decode import score_records

    os.chdir(HERE)  # relative paths only in the saved config
    base = Path("base")
    tok = build_tiny_tokenizer(base)
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tok), hidden_size=16, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, intermediate_size=32,
                         max_position_embeddings=128, tie_word_embeddings=True,
                         bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                         pad_token_id=tok.pad_token_id)
    LlamaForCausalLM(config).eval().save_pretrained(base)
    data = Path("train.jsonl")
    data.write_text("".join(json.dumps(p) + "\n" for p in make_pairs(40, seed=5)))
    model = train(TrainConfig(train_file=str(data), output_dir="out", model=str(base),
                              prompt_template="Translate: {source}\n", lr=1e-2, bias=True,
                              batch_size=8, max_steps=4, eval_every=2, validation_fraction=0.2,
                              progress=False, device="cpu", seed=3))
    model.save_pretrained("head")
    scores = score_records(model, RECORDS, with_tokens=True, progress=False)
    Path("expected_scores.json").write_text(json.dumps(
        {"records": RECORDS, "scores": scores}, indent=1, ensure_ascii=False) + "\n")
    data.unlink()
    shutil.rmtree("out")


if __name__ == "__main__":
    main()
