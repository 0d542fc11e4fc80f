"""Parent-side helpers of the reliability tests: subprocesses, published-file identities, and the
checks every scenario ends with (mirror, lzcheck, sequence numbers, state).

The checks never trust the library's own view: published files are read from disk, the expected
table is computed in plain Python (``workloads``), and the landing zone is also judged by the
independent contract checker ``lzcheck.py`` (written from the contract without this code).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from openmirror_nb._core.landing_zone import CLEANUP_FOLDERS, parse_sequence
from tests import contract_checker

REPO = Path(__file__).resolve().parents[2]
# Short-lived Spark drivers start 2-3x faster with the C1 JIT only; semantics are unchanged.
FAST_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
WAIT = 600.0  # generous upper bound for any wait; never an assertion about speed


def child_env(**extra: str) -> dict[str, str]:
    # No kill point, and no Delta jars (tests/conftest.py gives them to the suite's sessions): a
    # child that needs Delta is given them in ``extra``.
    env = {k: v for k, v in os.environ.items() if k not in ("OPENMIRROR_CRASH_AT", "OPENMIRROR_SPARK_JARS")}
    env.update(
        SPARK_LOCAL_IP="127.0.0.1",
        PYSPARK_PYTHON=sys.executable,
        JAVA_TOOL_OPTIONS=FAST_JVM,
        PYTHONPATH=str(REPO),
    )
    env.update(extra)
    return env


def spawn(args: list[str], log: Path, **env: str) -> subprocess.Popen[bytes]:
    """Run ``python -m tests.reliability.workloads ARGS`` in its own process group."""
    with open(log, "wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "tests.reliability.workloads", *args],
            cwd=REPO,
            env=child_env(**env),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def tail(log: Path, chars: int = 3000) -> str:
    return log.read_text(errors="replace")[-chars:] if log.exists() else "(no output)"


def _alive_in_group(pgid: int) -> list[int]:
    alive = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(int(stat.parent.name))
    return alive


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the child's whole process group (driver, JVM, Python workers) and wait until it is gone."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=WAIT)
    deadline = time.monotonic() + WAIT
    while _alive_in_group(proc.pid):
        assert time.monotonic() < deadline, "the killed child's process group did not exit"
        time.sleep(0.05)


def wait_until(condition: Callable[[], bool], what: str, proc: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the child exited ({proc.returncode}) before {what}")
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


# Published files ---------------------------------------------------------------------------------

Identity = tuple[int, int, str]


def _folders(table_dir: Path) -> list[Path]:
    return [table_dir, *(table_dir / c for c in CLEANUP_FOLDERS)]


def published(table_dir: Path) -> dict[str, Identity]:
    """(inode, size, sha256) of every published data file and ``_metadata.json``, by name.

    Files the mirror moved to a cleanup folder keep their name and inode, so they match.
    """
    found: dict[str, Identity] = {}
    for folder in _folders(table_dir):
        if not folder.is_dir():
            continue
        for path in folder.iterdir():
            if path.is_file() and (parse_sequence(path.name) is not None or path.name == "_metadata.json"):
                assert path.name not in found, f"{path.name} is published twice"
                st = path.stat()
                found[path.name] = (st.st_ino, st.st_size, hashlib.sha256(path.read_bytes()).hexdigest())
    return found


def assert_not_overwritten(before: dict[str, Identity], after: dict[str, Identity]) -> None:
    for name, identity in before.items():
        assert name in after, f"published file {name} disappeared"
        assert after[name] == identity, f"published file {name} was replaced or changed"


def sequence_numbers(table_dir: Path) -> list[int]:
    return sorted(
        seq
        for folder in _folders(table_dir)
        if folder.is_dir()
        for seq in (parse_sequence(p.name) for p in folder.iterdir() if p.is_file())
        if seq is not None
    )


def data_file(table_dir: Path, name: str) -> Path:
    for folder in _folders(table_dir):
        if (folder / name).is_file():
            return folder / name
    raise AssertionError(f"{name} is not published in {table_dir}")


def read_ids(table_dir: Path, name: str) -> list[int]:
    return pq.read_table(data_file(table_dir, name)).column("id").to_pylist()


# Rows --------------------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value.item() if hasattr(value, "item") else value


def ordered(rows: Any) -> list[tuple[Any, ...]]:
    """Rows as tuples in a total order (NULLs first), for comparisons."""
    return sorted((tuple(r) for r in rows), key=lambda row: tuple((v is not None, v) for v in row))


def rows_of(
    records: list[dict[str, Any]], columns: tuple[str, ...] = ("id", "v", "n")
) -> list[tuple[Any, ...]]:
    return ordered(tuple(_plain(r.get(c)) for c in columns) for r in records)


def mirrored_rows(db: Any, table: str, columns: tuple[str, ...] = ("id", "v", "n")) -> list[tuple[Any, ...]]:
    frame = db.read_table(table, as_pandas=True)
    return rows_of(frame.to_dict("records"), columns)


# The independent contract checker (tests/contract_checker.py) ------------------------------------


def lzcheck(lz: Path, table: str, columns: tuple[str, ...] = ("id", "v", "n")) -> list[tuple[Any, ...]]:
    """``lzcheck validate`` must find no violation; returns the rows ``lzcheck replay`` computes."""
    return rows_of(contract_checker.verdict(lz, table), columns)


def table_status(root: Path, table: str) -> dict[str, Any]:
    qualified = table if "." in table else f"dbo.{table}"
    doc = json.loads((root / "Files" / "Monitoring" / "tables.json").read_text())
    found = [t for t in doc["tables"] if t["normalizedTableName"] == qualified]
    assert found, f"{qualified} is not in tables.json"
    return found[0]


def assert_landing_zone_sound(root: Path, table: str, expected: list[Any], *, db: Any) -> None:
    """The end state every reliability scenario must reach.

    Sequence numbers continuous from 1 and recorded in state, no journal or zero-byte file left,
    the mirror replicating and holding exactly ``expected`` (so no row lost or doubled), and the
    independent checker agreeing.
    """
    lz = root / "Files" / "LandingZone"
    table_dir = lz / (table.replace(".", ".schema/", 1) if "." in table else table)
    seqs = sequence_numbers(table_dir)
    assert seqs == list(range(1, len(seqs) + 1)), f"sequence numbers not continuous from 1: {seqs}"
    state = json.loads((table_dir / "_openmirror" / "state.json").read_text())
    assert state["last_sequence_number"] == seqs[-1]
    internal = table_dir / "_openmirror"
    assert not (internal / "journal.json").exists(), "a journal was left behind"
    assert not (internal / "staging").exists(), "staging was left behind"
    live = {state["base"], *state["deltas"]} - {None}
    kept = {
        f"{table_dir.relative_to(lz).as_posix()}/_openmirror/keystate/{p.name}"
        for p in (internal / "keystate").glob("*")
    }
    assert kept == live, f"key state on disk {sorted(kept)} is not the state's {sorted(live)}"
    for folder in _folders(table_dir):
        for path in folder.glob("*") if folder.is_dir() else ():
            if parse_sequence(path.name) is not None:
                assert path.stat().st_size > 0, f"{path.name} is a zero-byte published file"
    status = table_status(root, table)
    assert (status["status"], status["errorCode"], status["errorMessage"]) == ("Replicating", "", "")
    mirrored = mirrored_rows(db, table)
    assert len({r[0] for r in mirrored}) == len(mirrored), "duplicate keys in the mirrored table"
    missing = sorted(set(ordered(expected)) - set(mirrored))
    extra = sorted(set(mirrored) - set(ordered(expected)))
    assert mirrored == ordered(expected), f"mirror lacks {missing[:10]}, has extra {extra[:10]}"
    assert lzcheck(lz, table) == ordered(expected)


def assert_state_knows(db: Any, spark: Any, table: str, expected: list[Any], schema: str) -> None:
    """The table's key state agrees with what was published: pushing ``expected`` as a snapshot
    finds nothing to change (a lost or doubled push in the state would publish a diff)."""
    before = sequence_numbers(db.target.landing_zone / table)
    result = db.push(spark.createDataFrame(list(expected), schema), table=table, keys=["id"])
    assert result.sequence_numbers == (), f"the key state disagrees with the table: diff {result.rows}"
    assert sequence_numbers(db.target.landing_zone / table) == before
