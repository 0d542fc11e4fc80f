"""Behaviour 12: random change streams, mirrored vs an independent replay written here."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openmirror_nb._core.mirror import LocalMirror, SyncLimits, read_delta_arrow

MARKER = "__rowMarker__"
KEYS = st.tuples(st.integers(0, 4), st.sampled_from(["a", "b"]))
VALUES = st.one_of(st.none(), st.text(alphabet="xyz,\"'\n", max_size=3))
CHANGE = st.tuples(KEYS, VALUES, st.integers(-3, 3), st.sampled_from([0, 1, 2, 4]))
FILE = st.tuples(st.booleans(), st.lists(CHANGE, max_size=8))  # (carries column n?, rows)
STREAM = st.fixed_dictionaries(
    {
        "initial": st.lists(st.tuples(KEYS, VALUES, st.integers(-3, 3)), max_size=6),
        "files": st.lists(FILE, max_size=4),
        "upsert_default": st.booleans(),
        "passes": st.lists(st.booleans(), min_size=5, max_size=5),
        "max_rows": st.sampled_from([1, 3, 1_000_000]),
    }
)


def replay(stream):
    """The table the contract's marker matrix produces, applied one row at a time."""
    rows = []

    def apply(key, v, n, marker):
        if marker != 0:
            rows[:] = [r for r in rows if r[:2] != key]
        if marker != 2:
            rows.append((*key, v, n))

    for key, v, n in stream["initial"]:
        apply(key, v, n, 4 if stream["upsert_default"] else 0)
    for has_n, changes in stream["files"]:
        for key, v, n, marker in changes:
            apply(key, v, n if has_n else None, marker)
    return sorted(rows, key=repr)


def _file(rows, *, has_n, markers=None):
    columns = {
        "region": pa.array([k[1] for k, *_ in rows], pa.string()),
        "id": pa.array([k[0] for k, *_ in rows], pa.int64()),
        "v": pa.array([r[1] for r in rows], pa.string()),
    }
    if has_n:
        columns["n"] = pa.array([r[2] for r in rows], pa.int32())
    if markers is not None:
        columns[MARKER] = pa.array(markers, pa.int8())
    return pa.table(columns)


def mirror_stream(root: Path, stream):
    import json

    import pyarrow.parquet as pq

    folder = root / "Files" / "LandingZone" / "sales.schema" / "orders"
    folder.mkdir(parents=True)
    meta = {"keyColumns": ["id", "region"], "isUpsertDefaultRowMarker": stream["upsert_default"]}
    (folder / "_metadata.json").write_text(json.dumps(meta))
    mirror = LocalMirror(root, limits=SyncLimits(max_rows=stream["max_rows"]))
    files = [_file(stream["initial"], has_n=True)]
    files += [
        _file(changes, has_n=has_n, markers=[c[3] for c in changes]) for has_n, changes in stream["files"]
    ]
    for seq, (table, run_after) in enumerate(zip(files, stream["passes"], strict=False), 1):
        pq.write_table(table, folder / f"_{seq}.tmp")
        (folder / f"_{seq}.tmp").rename(folder / f"{seq:020d}.parquet")
        if run_after:
            mirror.run_once()
    run = mirror.run_once()
    assert run["sales.orders"].status == "Replicating", run["sales.orders"].error
    data = read_delta_arrow(root / "Tables" / "sales" / "orders")
    n = data.column("n").to_pylist() if "n" in data.column_names else [None] * data.num_rows
    got = list(
        zip(
            data.column("id").to_pylist(),
            data.column("region").to_pylist(),
            data.column("v").to_pylist(),
            n,
            strict=True,
        )
    )
    return sorted(got, key=repr)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(STREAM)
def test_mirrored_table_equals_an_independent_replay(stream):
    with tempfile.TemporaryDirectory() as tmp:
        assert mirror_stream(Path(tmp), stream) == replay(stream)


PIECES = st.sampled_from(["a", '"', "\\", ",", "\n", "\r\n", " ", "é", "N/A", "null"])
TEXT = st.one_of(st.none(), st.lists(PIECES, max_size=4).map("".join))


def _quoted(value):
    if value is None:
        return ""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(TEXT, st.one_of(st.none(), st.integers(-(2**40), 2**40))), max_size=8))
def test_delimited_text_round_trips_nulls_empty_strings_and_specials(rows):
    """Text written by the writer's conventions reads back exactly: NULL bare, strings quoted."""
    import json

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        folder = root / "Files" / "LandingZone" / "t"
        folder.mkdir(parents=True)
        columns = [
            {"Name": "k", "DataType": "Int32"},
            {"Name": "s", "DataType": "String"},
            {"Name": "n", "DataType": "Int64"},
        ]
        meta = {
            "keyColumns": ["k"],
            "SchemaDefinition": {"Columns": columns},
            "FileFormat": "DelimitedText",
            "FileExtension": "csv",
        }
        (folder / "_metadata.json").write_text(json.dumps(meta))
        lines = ["k,s,n,__rowMarker__"] + [
            f"{i},{_quoted(s)},{'' if n is None else n},0" for i, (s, n) in enumerate(rows)
        ]
        (folder / "00000000000000000001.csv").write_bytes(("\r\n".join(lines) + "\r\n").encode())
        run = LocalMirror(root).run_once()
        assert run["t"].status == "Replicating", run["t"].error
        data = read_delta_arrow(root / "Tables" / "dbo" / "t").sort_by("k")
        assert list(zip(data.column("s").to_pylist(), data.column("n").to_pylist(), strict=True)) == rows
