"""Bench: the local mirror applying a change set vs a plain ``deltalake`` MERGE of the same set.

1M target rows, 100k changes (60k updates as markers 1/4, 20k deletes, 20k inserts), several
repetitions interleaved in one process, medians compared. Writes ``bench/results/mirror.json``.
Run: ``.venv/bin/python bench/bench_mirror.py [--reps N] [--rows N] [--changes N]``.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import deltalake
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable, write_deltalake

from openmirror_nb._core.mirror import LocalMirror, read_delta_arrow

MARKER = "__rowMarker__"
RESULTS = Path(__file__).parent / "results" / "mirror.json"


def make_rows(ids: np.ndarray, rng: np.random.Generator) -> pa.Table:
    n = len(ids)
    micros = rng.integers(1_600_000_000_000_000, 1_700_000_000_000_000, n)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "qty": pa.array(rng.integers(0, 1000, n), pa.int32()),
            "price": pa.array(rng.random(n) * 100),
            "name": pa.array([f"customer-{i % 50_000}" for i in ids]),
            "active": pa.array(rng.random(n) < 0.5),
            "updated": pa.array(micros, pa.timestamp("us", tz="UTC")),
            "region": pa.array(rng.choice(["north", "south", "east", "west"], n)),
        }
    )


def make_data(rows: int, changes: int, seed: int = 7) -> tuple[pa.Table, pa.Table]:
    rng = np.random.default_rng(seed)
    base = make_rows(np.arange(rows), rng)
    n_upd, n_del = changes * 6 // 10, changes * 2 // 10
    n_ins = changes - n_upd - n_del
    touched = rng.choice(rows, n_upd + n_del, replace=False)
    parts = [
        make_rows(touched[:n_upd], rng),
        make_rows(touched[n_upd:], rng),
        make_rows(np.arange(rows, rows + n_ins), rng),
    ]
    markers = np.concatenate([rng.choice([1, 4], n_upd), np.full(n_del, 2), np.zeros(n_ins)]).astype(np.int32)
    change = pa.concat_tables(parts).append_column(MARKER, pa.array(markers))
    return base, change.take(pa.array(rng.permutation(changes)))


def write_file(folder: Path, sequence: int, table: pa.Table) -> Path:
    tmp = folder / f"_{sequence:020d}.parquet"
    pq.write_table(table, tmp)
    final = folder / f"{sequence:020d}.parquet"
    tmp.rename(final)
    return final


def time_mirror(work: Path, base: pa.Table, change: pa.Table) -> tuple[float, pa.Table]:
    root = work / "db"
    shutil.rmtree(root, ignore_errors=True)
    folder = root / "Files" / "LandingZone" / "orders"
    folder.mkdir(parents=True)
    (folder / "_metadata.json").write_text(json.dumps({"keyColumns": ["id"]}))
    write_file(folder, 1, base)
    mirror = LocalMirror(root)
    mirror.run_once()
    write_file(folder, 2, change)
    start = time.perf_counter()
    run = mirror.run_once()
    seconds = time.perf_counter() - start
    assert run["orders"].files_applied == ("00000000000000000002.parquet",), run
    return seconds, read_delta_arrow(root / "Tables" / "dbo" / "orders").sort_by("id")


def time_merge(work: Path, base: pa.Table, change_file: Path) -> tuple[float, pa.Table]:
    path = work / "merge"
    shutil.rmtree(path, ignore_errors=True)
    write_deltalake(str(path), base)
    start = time.perf_counter()
    change = pq.read_table(change_file)
    cols = [c for c in change.column_names if c != MARKER]
    (
        DeltaTable(str(path))
        .merge(source=change, predicate="t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_delete(predicate=f"s.{MARKER} = 2")
        .when_matched_update(updates={c: f"s.{c}" for c in cols}, predicate=f"s.{MARKER} <> 2")
        .when_not_matched_insert(updates={c: f"s.{c}" for c in cols}, predicate=f"s.{MARKER} <> 2")
        .execute()
    )
    seconds = time.perf_counter() - start
    return seconds, DeltaTable(str(path)).to_pyarrow_table().sort_by("id")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--changes", type=int, default=100_000)
    args = parser.parse_args()
    base, change = make_data(args.rows, args.changes)
    mirror_s, merge_s = [], []
    with tempfile.TemporaryDirectory(prefix="bench-mirror-") as tmp:
        work = Path(tmp)
        change_file = work / "change.parquet"
        pq.write_table(change, change_file)
        for rep in range(args.reps):
            m, mirrored = time_mirror(work, base, change)
            b, merged = time_merge(work, base, change_file)
            # Same change set, same result: the two timings measure the same work.
            if not mirrored.equals(merged.select(mirrored.column_names).cast(mirrored.schema)):
                raise SystemExit("the mirrored table differs from the MERGE result")
            mirror_s.append(m)
            merge_s.append(b)
            print(f"rep {rep + 1}: mirror {m:.3f} s, merge {b:.3f} s, rows {mirrored.num_rows:,}")
    result = {
        "target_rows": args.rows,
        "changes": args.changes,
        "mix": {
            "updates (markers 1 and 4)": args.changes * 6 // 10,
            "deletes (marker 2)": args.changes * 2 // 10,
            "inserts (marker 0)": args.changes - args.changes * 6 // 10 - args.changes * 2 // 10,
        },
        "repetitions": args.reps,
        "mirror_run_once_seconds": [round(s, 4) for s in mirror_s],
        "deltalake_merge_seconds": [round(s, 4) for s in merge_s],
        "mirror_median_seconds": round(statistics.median(mirror_s), 4),
        "merge_median_seconds": round(statistics.median(merge_s), 4),
        "ratio": round(statistics.median(mirror_s) / statistics.median(merge_s), 3),
        "goal_ratio": 1.2,
        "deltalake": deltalake.__version__,
        "pyarrow": pa.__version__,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {platform.system()}",
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("mirror_median_seconds", "merge_median_seconds", "ratio")}))


if __name__ == "__main__":
    main()
