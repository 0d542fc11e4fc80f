"""Delta tables for the Delta source tests: the real ones under tests/data/delta, replayed a
version at a time, and the mirrored table read back exactly (years 1 and 9999 included)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from deltalake import DeltaTable

import openmirror_nb as om

DATA = Path(__file__).resolve().parents[1] / "data" / "delta"


def as_of(name: str, dst: Path, version: int) -> str:
    """``dst`` holds table ``name`` as it was at ``version``: every data file, the log up to it.

    Files no log entry names yet are ignored by readers, as on a table being written.
    """
    src = DATA / name
    if not dst.exists():
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("_delta_log"))
        (dst / "_delta_log").mkdir()
    versions = [int(f.name.split(".")[0]) for f in (src / "_delta_log").iterdir() if f.name[0].isdigit()]
    for entry in (src / "_delta_log").iterdir():
        number = int(entry.name.split(".")[0]) if entry.name[0].isdigit() else max(versions)
        if number <= version:
            shutil.copy(entry, dst / "_delta_log" / entry.name)
    return str(dst)


def mirrored(db: Any, table: str, columns: tuple[str, ...]) -> list[tuple[Any, ...]]:
    """The mirrored table's rows (after the local mirror ran), sorted, read with deltalake."""
    om.LocalMirror(db.target.root).run_once()
    rows = DeltaTable(str(db.target.root / "Tables" / "dbo" / table)).to_pyarrow_table().to_pylist()
    return ordered(tuple(r[c] for c in columns) for r in rows)


def ordered(rows: Any) -> list[tuple[Any, ...]]:
    """Rows sorted column by column, NULLs last."""
    return sorted(rows, key=lambda row: tuple((v is None, 0 if v is None else v) for v in row))
