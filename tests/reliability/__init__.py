"""Reliability suite (issue 5): crash matrix, concurrency, bad input, mirror faults, secrets."""

from __future__ import annotations
