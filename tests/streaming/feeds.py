"""Streaming sources the tests feed by hand: JSON files dropped into a folder (as a Kafka Connect
storage sink writes a topic), read by Spark's file source; and the run of a query to its end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SCHEMA = "id long, v string, n long, op int"
COLUMNS = ("id", "v", "n")


class Feed:
    """A folder of JSON-lines files, one per drop, and the file source that reads it."""

    def __init__(self, root: Path) -> None:
        self.folder = root / "feed"
        self.folder.mkdir(parents=True, exist_ok=True)
        self.drops = 0

    def drop(self, rows: list[dict[str, Any]]) -> Path:
        """One file of events (written under a dot name, then renamed: the source never sees half)."""
        self.drops += 1
        path = self.folder / f"part-{self.drops:05d}.json"
        tmp = self.folder / f".{path.name}.tmp"
        tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
        tmp.rename(path)
        return path

    def stream(self, spark: Any, schema: str = SCHEMA, *, per_batch: int = 1) -> Any:
        return spark.readStream.schema(schema).option("maxFilesPerTrigger", per_batch).json(str(self.folder))


def run(df: Any, sink: Any, checkpoint: Path) -> Any:
    """Run ``df`` through ``sink`` until what has arrived is in (``availableNow``); the query."""
    query = (
        df.writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    return query


def forget_commit(checkpoint: Path, batch: int) -> None:
    """Remove batch ``batch`` from the checkpoint's commit log (and its checksum): the restarted
    query runs it again, exactly as after a crash between the sink returning and Spark's commit."""
    (checkpoint / "commits" / str(batch)).unlink()
    (checkpoint / "commits" / f".{batch}.crc").unlink(missing_ok=True)


def event(i: int, op: int = 4, v: str | None = None, n: int | None = None) -> dict[str, Any]:
    return {"id": i, "v": v if v is not None else f"v{i}", "n": n if n is not None else i, "op": op}


def applied(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The table the events make, applied in order once each (0/1/4 write the row, 2 deletes)."""
    table: dict[int, tuple[Any, ...]] = {}
    for e in events:
        if e["op"] == 2:
            table.pop(e["id"], None)
        else:
            table[e["id"]] = (e["id"], e["v"], e["n"])
    return sorted(table.values())


def kill_events(batch: int) -> list[dict[str, Any]]:
    """One table's change events in micro-batch ``batch`` of the kill tests: inserts, upserts,
    deletes and an update (marker 1), every key's changes of a batch in that batch."""
    if batch == 0:
        changes = [(i, f"v{i}", i, 0) for i in range(1, 13)]
    elif batch == 1:
        changes = [(i, f"u{i}", -i, 4) for i in range(1, 5)] + [(5, None, None, 2), (6, None, None, 2)]
        changes += [(i, f"v{i}", i, 0) for i in range(20, 28)]
    else:
        changes = [(i, f"v{i}", i, 0) for i in range(30, 36)] + [(20, "again", 7, 1)]
    return [{"id": i, "v": v, "n": n, "op": op} for i, v, n, op in changes]
