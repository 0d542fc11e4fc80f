"""Tests of the local mirror (openmirror_nb.mirror)."""

from __future__ import annotations
