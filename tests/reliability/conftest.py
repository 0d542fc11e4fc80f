"""Fixtures of the reliability suite; its helper module gets pytest's assertion rewriting."""

from __future__ import annotations

import pytest

pytest.register_assert_rewrite("tests.reliability.harness")
