"""Recipe tests import the recipe scripts one way: as top-level modules from recipes/bible.

The scripts themselves import their neighbours that way (``from mt_eval import ...``), so
their folder goes on ``sys.path`` once, here, and every test does ``import <script>``.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIBLE = ROOT / "recipes" / "bible"
if str(BIBLE) not in sys.path:
    sys.path.insert(0, str(BIBLE))
