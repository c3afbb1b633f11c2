"""``python -m sigmoid_head.cli``: the same as the ``sigmoid-head`` command."""

import sys

from . import main

sys.exit(main())
