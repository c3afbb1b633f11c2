"""Hide optional packages from every Python process started with this folder on PYTHONPATH.

``tests/check_extras.py`` puts this folder first on ``PYTHONPATH`` and names the packages in
``SIGMOID_HEAD_HIDE_MODULES`` (comma-separated top-level import names), so that pytest and
every child process it starts (the CLI in a subprocess included) see an environment without
one optional extra: ``import matplotlib`` raises ModuleNotFoundError exactly as when the
package is not installed. With the variable unset this file does nothing.
"""

from __future__ import annotations

import os
import sys

_HIDDEN = frozenset(
    n.strip() for n in os.environ.get("SIGMOID_HEAD_HIDE_MODULES", "").split(",") if n.strip()
)


class _HideOptionalModules:
    """A meta-path finder that refuses the hidden top-level packages and their submodules."""

    def find_spec(self, name, path=None, target=None):  # noqa: ARG002 - the finder protocol
        if name.partition(".")[0] in _HIDDEN:
            raise ModuleNotFoundError(
                f"No module named {name!r} (hidden: testing without its extra)", name=name
            )
        return None


if _HIDDEN:
    sys.meta_path.insert(0, _HideOptionalModules())
