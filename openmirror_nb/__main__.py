"""``python -m openmirror_nb VERB ...``: the ``openmirror`` command."""

from __future__ import annotations

import sys

from openmirror_nb._core.cli import main

sys.exit(main())
