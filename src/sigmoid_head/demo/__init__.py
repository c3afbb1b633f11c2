"""``sigmoid-head demo``: the demo itself (``run``) and its settings (``config``)."""
