"""``openmirror status`` prints each table's freshness: a column with the age and the p95 (``age
unknown`` when nothing was measured, never 0), and for one table asked for, where the time goes.

The measured case runs on the database ``test_cli_push_initial_and_changes`` pushes (a Spark push
costs seconds: one is enough)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import openmirror_nb as om
from openmirror_nb._core.cli import main


def check_freshness_printed(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``sales.orders`` pushed twice with the CLI, then mirrored: both commands print figures."""
    om.LocalMirror(db).run_once()
    capsys.readouterr()
    assert main(["status", "--db", str(db)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "sales.orders" in x)
    # measured: the age since the newest source time applied, and the p95 of the files applied
    found = re.search(r"Replicating  age ([\d.]+) (s|min) · p95 ([\d.]+) (s|min)  2 processed", line)
    assert found is not None, line
    assert float(found.group(1)) > 0  # a measured age, not a 0 standing in for unknown

    assert main(["status", "sales.orders", "--db", str(db)]) == 0
    split = capsys.readouterr().out.split("Freshness of sales.orders:", 1)[1].splitlines()
    assert any(x.strip().startswith("applied figure: exact: when the local mirror") for x in split)
    applied = next(x for x in split if x.strip().startswith("published → applied"))
    assert re.search(r"([\d.]+ s +){3}2$", applied), applied  # latest, p50, p95, two files


def test_cli_status_of_one_table_without_measured_files_says_unknown(tmp_path, capsys):
    from tests.test_cli import _database

    root = _database(tmp_path / "db")
    assert main(["status", "sales.orders", "--db", str(root)]) == 0
    out = capsys.readouterr().out
    assert "Replicating  age unknown  1 processed" in out
    assert "Freshness of sales.orders:" in out or "Freshness: unknown" in out
    assert "age 0" not in out and " 0 s ·" not in out
