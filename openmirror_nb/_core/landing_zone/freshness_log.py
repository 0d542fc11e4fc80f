"""How fresh each published file was, kept beside the table (``_openmirror/freshness.json``).

Every push records, per landing-zone file it publishes, when the file was published and, when it
knows them, when its changes happened at the source (``SourceTimes``: Debezium's
``source.ts_ms``, a Delta commit's timestamp, a snapshot's read time); a push that found nothing
to publish records that the table was current as of its read (a *check*). The log is small and
rolling (the newest ``KEEP_FILES`` files, ``KEEP_CHECKS`` checks); it lives in the table folder's
``_openmirror/``, so a drop ends it with the table, and no column is added to the mirrored table.

It is written by ``publish.roll_forward`` (under the table lock, after the state commit) and by a
push that publishes nothing; ``status.freshness`` reads it. When the mirror applied a file comes
from the mirror: exactly from the local mirror's state, or, where only the service's status says
it (Fabric), as the ``lastSyncDateTime`` of the first status read that shows the file processed,
an upper bound, kept at the landing zone's root in ``_openmirror/freshness/<table>.json``.

Times are epoch seconds. Source times are on the source's clock; ``skew`` (source clock minus
this machine's, measured) turns them into this machine's time, and ``None`` says it is unknown.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

from openmirror_nb._core.errors import StorageError
from openmirror_nb._core.landing_zone.names import INTERNAL_FOLDER
from openmirror_nb._core.storage.base import Storage

KEEP_FILES = 250
KEEP_CHECKS = 20
FRESHNESS_FILE = "freshness.json"
MARKS_FOLDER = f"{INTERNAL_FOLDER}/freshness"
log = logging.getLogger("openmirror_nb")

# commit: the source's commit time (Debezium's source.ts_ms, a Delta commit); read: when a
# snapshot was read (a plan run, a snapshot push); topic: only the Kafka message time is known.
SourceKind = Literal["commit", "read", "topic"]


@dataclass(frozen=True)
class SourceTimes:
    """When the changes of one push happened: the oldest and the newest, at the source.

    Attributes:
        kind: What the times are (``SourceKind``).
        oldest: The oldest change's source time; ``newest``: the newest (or, for a stream batch
            with heartbeats, the newest source time the batch saw at all).
        topic_oldest: When the oldest change reached its Kafka topic (the message timestamp),
            if it came through one; ``topic_newest`` likewise.
        skew: The source clock minus this machine's, in seconds, as measured (``None``: unknown;
            ``0`` for times taken on this machine); ``skew_error``: its ± bound.
    """

    kind: SourceKind
    oldest: float
    newest: float
    topic_oldest: float | None = None
    topic_newest: float | None = None
    skew: float | None = None
    skew_error: float | None = None

    def local(self, at: float) -> float:
        """A source time on this machine's clock (unchanged when the skew is unknown)."""
        return at - (self.skew or 0.0)

    def to_doc(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_doc(cls, doc: dict[str, Any] | None) -> SourceTimes | None:
        if not doc:
            return None
        return cls(**{k: doc[k] for k in cls.__dataclass_fields__ if k in doc})

    @classmethod
    def read_at(cls, at: float) -> SourceTimes:
        """A snapshot read at ``at`` on this machine."""
        return cls("read", at, at, skew=0.0, skew_error=0.0)


@dataclass(frozen=True)
class FileFreshness:
    """One published landing-zone file: its number, its name, when it was published and the
    source times of the push that published it (``None``: unknown)."""

    sequence: int
    name: str
    published: float
    source: SourceTimes | None = None


@dataclass(frozen=True)
class Check:
    """The table was current with its source as of ``source`` once file ``through`` is applied:
    a push that found nothing new (an unchanged snapshot or plan run, a Delta sync with no new
    version). A stream's batches say the same in ``stream_freshness.BatchMark``."""

    through: int
    at: float
    source: SourceTimes


@dataclass(frozen=True)
class FreshnessLog:
    """A table's rolling freshness record, oldest first."""

    files: tuple[FileFreshness, ...] = ()
    checks: tuple[Check, ...] = ()

    def with_files(self, new: list[FileFreshness]) -> FreshnessLog:
        """Add ``new``; a file already kept (a roll-forward run twice) is replaced."""
        numbers = {f.sequence for f in new}
        kept = [f for f in self.files if f.sequence not in numbers] + new
        kept.sort(key=lambda f: f.sequence)
        return replace(self, files=tuple(kept[-KEEP_FILES:]))

    def with_check(self, check: Check) -> FreshnessLog:
        return replace(self, checks=(*self.checks, check)[-KEEP_CHECKS:])

    def to_bytes(self) -> bytes:
        doc = {
            "version": 1,
            "files": [_file_doc(f) for f in self.files],
            "checks": [{"through": c.through, "at": c.at, "source": c.source.to_doc()} for c in self.checks],
        }
        return json.dumps(doc, separators=(",", ":")).encode("utf-8")

    @classmethod
    def from_bytes(cls, data: bytes) -> FreshnessLog:
        doc = json.loads(data)
        files = tuple(
            FileFreshness(
                int(f["sequence"]),
                str(f["name"]),
                float(f["published"]),
                SourceTimes.from_doc(f.get("source")),
            )
            for f in doc.get("files", ())
        )
        checks = tuple(
            Check(int(c["through"]), float(c["at"]), source)
            for c in doc.get("checks", ())
            if (source := SourceTimes.from_doc(c.get("source"))) is not None
        )
        return cls(files, checks)


def _file_doc(f: FileFreshness) -> dict[str, Any]:
    doc: dict[str, Any] = {"sequence": f.sequence, "name": f.name, "published": f.published}
    if f.source is not None:
        doc["source"] = f.source.to_doc()
    return doc


def log_path(internal: str) -> str:
    """The log of the table whose ``_openmirror/`` folder is ``internal``."""
    return f"{internal}/{FRESHNESS_FILE}"


def read_log(storage: Storage, internal: str) -> FreshnessLog:
    """The table's log; an empty one if it has none or it cannot be read (freshness is then
    unknown, which is what the status says, never an error of the table)."""
    try:
        return FreshnessLog.from_bytes(storage.read_bytes(log_path(internal)))
    except FileNotFoundError:
        return FreshnessLog()
    except (StorageError, ValueError, KeyError, TypeError) as exc:
        log.warning("The freshness log of %s could not be read: %s", internal, exc)
        return FreshnessLog()


def record_files(storage: Storage, internal: str, files: list[FileFreshness]) -> None:
    """Add published files to the table's log (under the table lock)."""
    _write(storage, internal, lambda found: found.with_files(files))


def record_check(storage: Storage, internal: str, check: Check) -> None:
    """Record that the table was current as of ``check`` (under the table lock)."""
    _write(storage, internal, lambda found: found.with_check(check))


def _write(storage: Storage, internal: str, change: Any) -> None:
    # The log only measures: a storage failure here must not fail a push whose files and state
    # are committed already. The figures it would have held read as unknown.
    try:
        storage.write_bytes(
            log_path(internal), change(read_log(storage, internal)).to_bytes(), overwrite=True
        )
    except StorageError as exc:
        log.warning("The freshness log of %s could not be written: %s", internal, exc)


@dataclass(frozen=True)
class AppliedMark:
    """When the mirror had applied a file, as a status read saw it: ``at`` and whether it is
    exact (the local mirror) or an upper bound (the service's ``lastSyncDateTime``)."""

    at: float
    bound: Literal["exact", "upper"]


def marks_path(table_key: str) -> str:
    # At the landing zone's root, never in the table folder: a status read holds no lock, and a
    # write into a folder a drop just deleted would make the folder again.
    return f"{MARKS_FOLDER}/{table_key}.json"


def read_marks(storage: Storage, table_key: str, incarnation: str | None) -> dict[int, AppliedMark]:
    """The applied times status reads recorded for this incarnation of the table, per sequence
    number (those of an earlier incarnation are no longer true)."""
    try:
        doc = json.loads(storage.read_bytes(marks_path(table_key)))
        if doc.get("incarnation") != incarnation:
            return {}
        return {int(k): AppliedMark(float(v[0]), v[1]) for k, v in doc["marks"].items()}
    except FileNotFoundError:
        return {}
    except (StorageError, ValueError, KeyError, TypeError, IndexError) as exc:
        log.warning("The applied times of %s could not be read: %s", table_key, exc)
        return {}


def write_marks(
    storage: Storage, table_key: str, incarnation: str | None, marks: dict[int, AppliedMark]
) -> None:
    """Keep ``marks`` for this incarnation of the table (a status read: it only measures, so a
    failure is logged, not raised)."""
    doc = {"incarnation": incarnation, "marks": {str(k): [m.at, m.bound] for k, m in sorted(marks.items())}}
    try:
        storage.write_bytes(marks_path(table_key), json.dumps(doc).encode("utf-8"), overwrite=True)
    except StorageError as exc:
        log.warning("The applied times of %s could not be written: %s", table_key, exc)


GOALS_FILE = f"{MARKS_FOLDER}/goals.json"


def read_goals(storage: Storage) -> dict[str, float]:
    """Each table's freshness goal in seconds, by its identity (``TableFolder.lock_name``). Kept
    at the root, not in the table folder: a goal outlives the table's reseeds, and a plan may set
    one before the table's first load."""
    try:
        return {str(k): float(v) for k, v in json.loads(storage.read_bytes(GOALS_FILE)).items()}
    except FileNotFoundError:
        return {}
    except (StorageError, ValueError, TypeError, AttributeError) as exc:
        log.warning("The freshness goals could not be read: %s", exc)
        return {}


def write_goal(storage: Storage, table_key: str, seconds: float | None) -> None:
    """Set (or, with ``None``, clear) one table's goal."""
    goals = read_goals(storage)
    if seconds is None:
        goals.pop(table_key, None)
    else:
        goals[table_key] = float(seconds)
    storage.write_bytes(
        GOALS_FILE, json.dumps(goals, indent=1, sort_keys=True).encode("utf-8"), overwrite=True
    )
