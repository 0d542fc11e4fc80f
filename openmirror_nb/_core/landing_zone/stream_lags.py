"""How far a Kafka mirror is behind its topics: per topic partition, the latest offset minus the
offset applied, saved at ``_openmirror/streams/<query id>.kafka.json`` so that any notebook's
``db.status()`` (and the monitor pane) shows it, not only the one running the stream.

Spark's Kafka source reports both offsets in each batch's progress (``endOffset``: what the batch
read up to, ``latestOffset``: the topic's end when it was planned); ``streaming.kafka_lag`` saves
them after every batch and when the query ends.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from openmirror_nb._core.landing_zone.names import INTERNAL_FOLDER
from openmirror_nb._core.storage.base import Storage

LAG_FOLDER = f"{INTERNAL_FOLDER}/streams"
LAG_SUFFIX = ".kafka.json"
log = logging.getLogger("openmirror_nb")


@dataclass(frozen=True)
class PartitionLag:
    """One topic partition of a Kafka mirror: the next offset to apply, and the topic's end."""

    topic: str
    partition: int
    table: str
    applied: int
    latest: int

    @property
    def lag(self) -> int:
        """Messages in the partition not applied yet."""
        return max(0, self.latest - self.applied)


def _offsets(value: Any) -> dict[str, dict[str, int]]:
    if not value:
        return {}
    doc = json.loads(value) if isinstance(value, str) else value
    return {str(t): {str(p): int(o) for p, o in parts.items()} for t, parts in doc.items()}


def progress_doc(progress: Any) -> dict[str, Any]:
    """A query progress as plain JSON values: PySpark 4's progress objects (a listener's, and
    ``lastProgress`` on 4.x) are dicts whose values are not (offsets as ``str`` of a dict, the id a
    UUID), so their ``json`` is read; PySpark 3.5's ``lastProgress`` is a plain dict already."""
    text = getattr(progress, "json", None)
    if isinstance(text, str):
        return dict(json.loads(text))
    return dict(progress)


def lag_of(progress: Mapping[str, Any], tables: Mapping[str, str]) -> list[PartitionLag]:
    """Each topic partition's lag in one progress (topics ``tables`` does not name are left out)."""
    found = []
    for source in progress.get("sources", []):
        applied, latest = _offsets(source.get("endOffset")), _offsets(source.get("latestOffset"))
        for topic, parts in applied.items():
            if topic not in tables:
                continue
            for partition, offset in parts.items():
                end = latest.get(topic, {}).get(partition, offset)
                found.append(PartitionLag(topic, int(partition), tables[topic], offset, max(end, offset)))
    return sorted(found, key=lambda p: (p.topic, p.partition))


def save_lag(storage: Storage, progress: Any, tables: Mapping[str, str]) -> None:
    """Save the lag a progress shows (nothing when it read no Kafka offsets yet)."""
    doc = progress_doc(progress)
    parts = lag_of(doc, tables)
    if not parts:
        return
    saved = {
        "query": doc.get("id"),
        "name": doc.get("name"),
        "batch": doc.get("batchId"),
        "saved": time.time(),
        "partitions": [
            {
                "topic": p.topic,
                "partition": p.partition,
                "table": p.table,
                "applied": p.applied,
                "latest": p.latest,
            }
            for p in parts
        ],
    }
    path = f"{LAG_FOLDER}/{doc.get('id')}{LAG_SUFFIX}"
    storage.write_bytes(path, (json.dumps(saved, indent=2) + "\n").encode("utf-8"), overwrite=True)


def read_lags(storage: Storage) -> dict[str, list[tuple[float, PartitionLag]]]:
    """Per table, the partitions every saved Kafka mirror reads for it, with when each was saved."""
    found: dict[str, list[tuple[float, PartitionLag]]] = {}
    names = [e.name for e in storage.list_dir(LAG_FOLDER) if not e.is_dir and e.name.endswith(LAG_SUFFIX)]
    for name in names:
        path = f"{LAG_FOLDER}/{name}"
        try:
            doc = json.loads(storage.read_bytes(path))
            saved = float(doc["saved"])
            for p in doc["partitions"]:
                lag = PartitionLag(
                    p["topic"], int(p["partition"]), p["table"], int(p["applied"]), int(p["latest"])
                )
                found.setdefault(lag.table, []).append((saved, lag))
        except (FileNotFoundError, ValueError, KeyError, TypeError) as exc:
            log.warning("Kafka lag record %s is unreadable (%s); status leaves it out.", path, exc)
    return found


def lag_text(parts: tuple[PartitionLag, ...]) -> str:
    """``12 messages behind (erp.sales.orders p0 5, p1 7, p2 0)``: the Kafka lag in one line."""
    total = sum(p.lag for p in parts)
    topics: dict[str, list[str]] = {}
    for p in parts:
        topics.setdefault(p.topic, []).append(f"p{p.partition} {p.lag:,}")
    shown = "; ".join(f"{topic} {', '.join(each)}" for topic, each in topics.items())
    return f"{total:,} message{'' if total == 1 else 's'} behind ({shown})"
