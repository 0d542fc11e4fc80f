"""Moved: ``openmirror_nb.landing_zone`` is internal now; use the API at the package root. Names read
from here still work, with a ``DeprecationWarning``."""

from __future__ import annotations

from openmirror_nb._core.moved import forwarder

__getattr__ = forwarder("landing_zone", {"scan": "db.scan(table)"})
