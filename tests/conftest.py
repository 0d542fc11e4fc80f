"""Shared fixtures: one local Spark session for the whole run, landing-zone tree hashes."""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def spark():
    from openmirror_nb.runtime import get_spark

    session = get_spark()
    yield session
    session.stop()


def tree_hash(root: Path) -> str:
    """Hash of every path and file content below ``root`` (folders included)."""
    digest = hashlib.sha256()
    if not root.exists():
        return "absent"
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        digest.update(rel.encode() + b"\0")
        if path.is_file():
            digest.update(path.read_bytes())
        digest.update(b"\1")
    return digest.hexdigest()


def visible_hash(root: Path) -> str:
    """``tree_hash`` of what the service reads below ``root``: the tool's own ``_openmirror``
    folders left out, and an absent folder the same as an empty one."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")) if root.exists() else ():
        rel = path.relative_to(root)
        if "_openmirror" in rel.parts:
            continue
        digest.update(
            rel.as_posix().encode() + b"\0" + (path.read_bytes() if path.is_file() else b"") + b"\1"
        )
    return digest.hexdigest()


@pytest.fixture(autouse=True)
def small_buckets(monkeypatch):
    """Test tables have a few rows: one row per bucket gives them several (up to the 4 shuffle
    partitions), so every push in the suite runs the bucket layout as a large table would (see
    pipeline.buckets)."""
    from openmirror_nb.pipeline import buckets

    monkeypatch.setattr(buckets, "ROWS_PER_BUCKET", 1)


@pytest.fixture
def lz_hash():
    return tree_hash
