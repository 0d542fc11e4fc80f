"""Delta change data feeds as the real library writes them (``deltalake`` with
``delta.enableChangeDataFeed``), pushed with ``convention="cdf"``: the mirror ends equal to the
Delta table, row for row, whatever order the feed lists a commit's rows in.

Delta defines no order of the rows inside one commit; a replaceWhere overwrite deletes and
re-inserts the same keys in one commit, and a feed that listed the insert first used to delete
the row in the mirror (issue 12). Each history below is pushed per version, in one push from
version 0, with every commit's rows reversed, compacted, and delivered twice.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

import openmirror_nb as om
from tests.reliability.harness import lzcheck, mirrored_rows, rows_of

pytestmark = [pytest.mark.spark, pytest.mark.runtime13]  # Delta sync: both Fabric lines

COLUMNS = ("id", "region", "v")
KEYS = ["id"]


def _rows(ids: list[int], region: str, v: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "region": [region] * len(ids), "v": [v] * len(ids)})


def _history(path: Path) -> int:
    """Versions 0-5 of a CDF-enabled table, one kind of change each; the last version."""
    base = pa.concat_tables([_rows([1, 2, 3, 4], "north", 0), _rows([10, 11, 12], "south", 0)])
    write_deltalake(str(path), base, configuration={"delta.enableChangeDataFeed": "true"})  # v0
    source = pa.table(
        {
            "id": pa.array([1, 11, 20], pa.int64()),
            "region": ["north", "south", "south"],
            "v": [1, 1, 1],
            "op": ["u", "d", "i"],
        }
    )
    (  # v1: MERGE with update, delete and insert clauses
        DeltaTable(str(path))
        .merge(source, predicate="t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_update(updates={"v": "s.v"}, predicate="s.op = 'u'")
        .when_matched_delete(predicate="s.op = 'd'")
        .when_not_matched_insert(updates={"id": "s.id", "region": "s.region", "v": "s.v"})
        .execute()
    )
    DeltaTable(str(path)).update(updates={"id": "id + 100"}, predicate="id = 3")  # v2: a key moves
    DeltaTable(str(path)).delete("id = 4")  # v3
    # v4: replaceWhere: the commit deletes every north row and inserts north rows, same keys too
    write_deltalake(
        str(path), _rows([1, 2, 103, 7], "north", 4), mode="overwrite", predicate="region = 'north'"
    )
    DeltaTable(str(path)).update(updates={"v": "v + 1"}, predicate="id = 1")  # v5: same key again
    return DeltaTable(str(path)).version()


def _feed(path: Path, start: int, end: int, *, reverse: bool = False) -> pa.Table:
    feed = pa.RecordBatchReader.from_stream(
        DeltaTable(str(path)).load_cdf(starting_version=start, ending_version=end)
    ).read_all()
    if reverse:  # the adversarial listing: inserts and postimages before the deletes of a commit
        feed = pa.concat_tables([feed.slice(i, 1) for i in range(feed.num_rows - 1, -1, -1)])
    return feed


@pytest.mark.parametrize("how", ["per_version", "from_v0", "reversed", "compact", "twice"])
def test_the_mirror_equals_the_delta_table_after_every_kind_of_change(spark, tmp_path, how):
    source = tmp_path / "source"
    last = _history(source)
    db = om.connect(tmp_path / "db", lock_timeout=30)
    if how == "per_version":
        spans = [(v, v) for v in range(last + 1)]
    else:
        spans = [(0, last)]
    for start, end in spans:
        feed = om.arrow_to_spark(_feed(source, start, end, reverse=how == "reversed"), spark=spark)
        for _ in range(2 if how == "twice" else 1):  # delivered twice: the same end state
            db.push(feed, table="t", keys=KEYS, mode="changes", convention="cdf", compact=how == "compact")
    om.LocalMirror(db.target.root).run_once()
    expected = rows_of(DeltaTable(str(source)).to_pyarrow_table().to_pylist(), COLUMNS)
    assert expected == [
        (1, "north", 5),
        (2, "north", 4),
        (7, "north", 4),
        (10, "south", 0),
        (12, "south", 0),
        (20, "south", 1),
        (103, "north", 4),
    ]
    assert mirrored_rows(db, "t", COLUMNS) == expected
    assert lzcheck(db.target.landing_zone, "t", COLUMNS) == expected
    mirrored = db.read_table("t", as_pandas=True)
    assert sorted(mirrored.columns) == sorted(COLUMNS)  # no _change_type, _commit_* columns


def test_what_load_cdf_returns_pushes_without_hand_casting(spark, tmp_path):
    """string_view, uint64 and millisecond timestamps become Spark types; big uint64 stays exact."""
    source = tmp_path / "source"
    _history(source)
    frame = om.arrow_to_spark(DeltaTable(str(source)).load_cdf(starting_version=0), spark=spark)
    kinds = dict(frame.dtypes)
    assert kinds["region"] == "string" and kinds["_change_type"] == "string"
    assert kinds["_commit_version"] == "bigint" and kinds["_commit_timestamp"].startswith("timestamp")
    big = om.arrow_to_spark(pa.table({"n": pa.array([2**64 - 1, 1], pa.uint64())}), spark=spark)
    assert dict(big.dtypes)["n"] == "decimal(20,0)"
    assert sorted(int(r["n"]) for r in big.collect()) == [1, 2**64 - 1]
    with pytest.raises(om.ConfigError, match="arrow_to_spark takes Arrow data"):
        om.arrow_to_spark([1, 2], spark=spark)
