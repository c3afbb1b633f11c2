"""Data: records and file formats, tokenization with label masks, batching, prompt rendering.

Modules (import them directly; this package imports nothing, so reading a file through
:mod:`.records` never loads torch):

* :mod:`.records`: the one text/JSONL reader and the training-record formats;
* :mod:`.tokenize`: records -> ``{"input_ids", "labels"}`` examples with label masks;
* :mod:`.batching`: :data:`~.batching.IGNORE_INDEX`, length-bucketed batches, padding;
* :mod:`.prompts`: scoring/generation records rendered exactly as training data.
"""
