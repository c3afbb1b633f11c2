"""Training data of a run: the train and validation examples, in memory or through
``datasets`` (Arrow on disk), and the held-out split when no validation file is given.
Human-labelled examples (``labelled_file``, :mod:`.labelled`) join the reference examples
in both, each part with its own held-out split. Validation files that share examples with
the training data, and labelled examples that are also reference examples, are refused or
counted (:mod:`.leakage`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..data import datasets_io
from ..data.tokenize import load_examples
from ..head.model import SigmoidHeadModel
from .config import TrainConfig, split_validation
from .leakage import check_mixed, check_overlap


def load_data(config: TrainConfig, model: SigmoidHeadModel, parsed: dict | None = None
               ) -> tuple[list[dict], list[dict]]:
    if config.data_engine != "memory":  # Arrow on disk (data/datasets_io.py)
        return _load_arrow(config, model)
    form = config.prompt_format(model.backbone.is_encoder_decoder)
    parsed = parsed or {}
    train: list[dict] = []
    val: list[dict] = []
    if config.train_file:
        train = load_examples(config.train_file, model.tokenizer, form, task=config.task,
                              records_with_lines=parsed.get(config.train_file))
        if config.validation_file:
            val = load_examples(config.validation_file, model.tokenizer, form, task=config.task,
                                records_with_lines=parsed.get(config.validation_file))
        else:
            train, val = split_validation(config, train)
        if not train:
            raise ValueError(f"{config.train_file} yielded no trainable examples")
        val = val[: config.max_validation_examples]
    labelled_train: list[dict] = []
    labelled_val: list[dict] = []
    if config.labelled_file:  # human labels: mixed into the same batches (step.position_labels)
        from .labelled import load_labelled

        labelled_train, labelled_val = load_labelled(config, model)
        if config.train_file:  # the same items as references and with labels: counted
            check_mixed(config.train_file, train, config.labelled_file, labelled_train)
    check_overlap({"train_file": train, "labelled_file": labelled_train},
                  {name: (path, part) for name, path, part in (
                      ("validation_file", config.validation_file, val),
                      ("labelled_validation_file", config.labelled_validation_file, labelled_val))
                   if path})
    return train + labelled_train, val + labelled_val


def _load_arrow(config: TrainConfig, model: SigmoidHeadModel):
    """Train and validation examples through ``datasets`` (:mod:`..data.datasets_io`)."""
    from accelerate import PartialState

    kw = {"is_encoder_decoder": model.backbone.is_encoder_decoder, "task": config.task,
          "max_length": config.max_length, "prompt_template": config.prompt_template,
          "use_chat_template": config.use_chat_template, "num_proc": config.num_proc,
          "streaming": config.data_engine == "streaming",
          "cache_dir": config.data_cache_dir or str(Path(config.output_dir) / "data_cache")}
    with PartialState().main_process_first():  # rank 0 tokenizes; the others reuse its Arrow
        train = datasets_io.load_examples_arrow(config.train_file, model.tokenizer, **kw)
        val = (datasets_io.load_examples_arrow(config.validation_file, model.tokenizer, **kw)
               if config.validation_file else None)
    if val is None:
        train, val = datasets_io.split_validation(train, config.validation_fraction,
                                                  config.max_validation_examples, config.seed)
    elif len(val) > config.max_validation_examples:
        val = val.subset(np.arange(config.max_validation_examples))
    return train, val if val is not None else []
