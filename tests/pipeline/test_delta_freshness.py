"""A Delta sync's freshness summaries (``_openmirror/freshness.json``) carry the commit times of
the versions it brought: a first sync its version's, a later one the first new version's and the
last's; a sync that finds no new version records a check as of when it asked. The commits' log
files are given known modification times: a commit's timestamp by Delta's protocol, without
in-commit timestamps."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

import openmirror_nb as om
from openmirror_nb._core.landing_zone.freshness_log import SourceTimes, read_log
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.pipeline.delta.commit_times import sync_times

HOUR = 3600.0


def _commit(path: Path, ids: range, version: int, at: float, **options: object) -> None:
    write_deltalake(str(path), pa.table({"id": pa.array(ids, pa.int64())}), **options)  # type: ignore[arg-type]
    os.utime(path / "_delta_log" / f"{version:020d}.json", (at, at))


@pytest.mark.spark
def test_each_sync_carries_the_commit_times_of_its_versions(spark, tmp_path):
    # one reader, the session's (Spark's where it has Delta, as in Fabric): both read commit times
    # by the same code (DeltaSource.commit_times), and one sync of each costs seconds
    source, base = tmp_path / "source", time.time() - 5 * HOUR
    _commit(source, range(3), 0, base, configuration={"delta.enableChangeDataFeed": "true"})
    db = om.connect(tmp_path / "db", lock_timeout=5)
    home = TableFolder.of(db.storage, "t")
    db.sync_delta(str(source), table="t", keys=["id"])
    first = read_log(db.storage, home.internal).files
    assert [(f.source.kind, f.source.oldest, f.source.newest, f.source.skew) for f in first] == [
        ("commit", pytest.approx(base, abs=0.01), pytest.approx(base, abs=0.01), None)
    ] * len(first)
    _commit(source, range(3, 5), 1, base + HOUR, mode="append")
    _commit(source, range(5, 7), 2, base + 2 * HOUR, mode="append")
    assert db.sync_delta(str(source), table="t").how == "changes"
    later = read_log(db.storage, home.internal).files[len(first) :]
    assert later and [(f.source.oldest, f.source.newest) for f in later] == [
        (pytest.approx(base + HOUR, abs=0.01), pytest.approx(base + 2 * HOUR, abs=0.01))
    ] * len(later)
    asked = time.time()
    assert db.sync_delta(str(source), table="t").how == "none"
    check = read_log(db.storage, home.internal).checks[-1]
    assert check.source.kind == "read" and asked <= check.source.newest <= time.time()
    assert check.through == later[-1].sequence


class _Log:
    """A source whose log still has the commits ``kept`` (the others were cleaned up)."""

    uri = "lake/t"

    def __init__(self, kept: dict[int, float]) -> None:
        self.kept = kept

    def commit_times(self, versions):
        if any(v not in self.kept for v in versions):
            raise FileNotFoundError("[PATH_NOT_FOUND] _delta_log/00000000000000000003.json")
        return {v: datetime.fromtimestamp(self.kept[v], UTC) for v in versions}


def test_a_cleaned_log_leaves_the_newest_commit_or_the_time_the_version_was_asked():
    assert sync_times(_Log({3: 10.0, 7: 70.0}), 2, 7, asked=99.0) == SourceTimes("commit", 10.0, 70.0)
    assert sync_times(_Log({7: 70.0}), 2, 7, asked=99.0) == SourceTimes("commit", 70.0, 70.0)
    assert sync_times(_Log({}), 2, 7, asked=99.0) == SourceTimes.read_at(99.0)
    assert sync_times(_Log({0: 5.0}), None, 0, asked=99.0) == SourceTimes("commit", 5.0, 5.0)
