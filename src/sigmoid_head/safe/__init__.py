"""Safe input and output, torch-free: durable file writes (``files``), always-valid JSON out
and depth-safe JSON in (``json_io``), text safe to print and embed (``text``), outputs that
cannot overwrite inputs and resume keys (``outputs``), finite and representable numbers
(``finite``), the type check of settings read from files (``config_types``) and the
resumable JSONL writer (``resumable_jsonl``)."""
