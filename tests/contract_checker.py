"""The independent contract checker ``lzcheck.py``, found here alone.

It was written from the landing-zone contract without reading this code, so that it can judge what the
code writes; it is kept outside the repository, at ``../shared/tools/lzcheck.py`` beside it
(``OPENMIRROR_LZCHECK`` names another file). Where it is missing, a test that asks for its verdict fails
when ``CI=true`` (as CI machines set it: a CI run must not pass without that verdict) and otherwise skips,
saying where it looked.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]  # the folder holding pyproject.toml
LZCHECK = Path(os.environ.get("OPENMIRROR_LZCHECK") or REPO.parent / "shared" / "tools" / "lzcheck.py")


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def checker() -> Any:
    """The checker's module, loaded once; fails (``CI=true``) or skips the test where it is missing."""
    if not LZCHECK.is_file():
        where = f"the contract checker lzcheck.py is not at {LZCHECK} (../shared/tools/ beside the repository"
        where += ", or the file OPENMIRROR_LZCHECK names)"
        if in_ci():
            pytest.fail(f"{where}; with CI=true a run without its verdict fails", pytrace=False)
        pytest.skip(f"{where}; all the test's other checks passed")
    return _load(LZCHECK)


@functools.cache
def _load(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location("lzcheck", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def verdict(lz: Path, table: str) -> list[dict[str, Any]]:
    """``lzcheck validate`` must find no violation; returns the records ``lzcheck replay`` computes."""
    lzcheck = checker()
    try:
        violations = lzcheck.validate(lz, table)
        replayed = lzcheck.replay(lz, table)
    except SystemExit as exc:  # its way of reporting a duplicate sequence number
        raise AssertionError(f"lzcheck: {exc}") from None
    assert violations == [], violations
    return list(replayed.to_pylist())
