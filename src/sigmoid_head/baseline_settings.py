"""Deprecated: ``sigmoid_head.baseline_settings`` moved to ``sigmoid_head.registry.baseline_settings``. Plugins
import from ``sigmoid_head.plugin`` (stable across releases). This alias is the same module
object as the new one (a plugin registering through it registers in the one registry); it
warns, and is kept for one more minor release."""

from __future__ import annotations

import sys
import warnings

from .registry import baseline_settings as _moved

warnings.warn("sigmoid_head.baseline_settings is deprecated: import from sigmoid_head.plugin (or "
              "sigmoid_head.registry.baseline_settings); the old path is kept for one more minor release",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
