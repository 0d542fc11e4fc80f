"""Tests of the local mirror (openmirror_nb._core.mirror)."""

from __future__ import annotations
