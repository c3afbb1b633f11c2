"""The offline default model: :mod:`.default_model` builds SmolLM2-135M-Instruct once from
its PyPI-shipped GGUF file (converted by :mod:`.gguf_convert`) and resolves
``model=None`` to it.
"""
