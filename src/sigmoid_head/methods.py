"""Deprecated: ``sigmoid_head.methods`` moved to ``sigmoid_head.registry.methods``. Plugins
import from ``sigmoid_head.plugin`` (stable across releases). This alias is the same module
object as the new one (a plugin registering through it registers in the one registry); it
warns, and is kept for one more minor release."""

from __future__ import annotations

import sys
import warnings

from .registry import methods as _moved

warnings.warn("sigmoid_head.methods is deprecated: import from sigmoid_head.plugin (or "
              "sigmoid_head.registry.methods); the old path is kept for one more minor release",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
