"""How fresh each table is (``Freshness``), from the per-file summaries a push keeps
(``landing_zone.freshness_log``), the stream's batch marks (``landing_zone.stream_freshness``) and
what the mirror says it applied.

When a file was applied: the local mirror records it exactly. Elsewhere (Fabric) the status says
only which files are processed and when the mirror last synced: the first status read that shows
a file processed records that ``lastSyncDateTime`` as an upper bound (or the read's own time,
also no earlier than the apply, when the mirror gives none), so later reads keep the same figure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal

from openmirror_nb._core.errors import InvalidNameError
from openmirror_nb._core.landing_zone.freshness_log import (
    AppliedMark,
    FileFreshness,
    FreshnessLog,
    read_goals,
    read_log,
    read_marks,
    write_marks,
)
from openmirror_nb._core.landing_zone.stream_freshness import BatchMark, read_all
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.mirror.progress import Applied
from openmirror_nb._core.model import TableRef
from openmirror_nb._core.status.freshness_records import (
    PUBLISHED_TO_APPLIED,
    SOURCE_TO_PUBLISHED,
    SOURCE_TO_TOPIC,
    TOPIC_TO_PUBLISHED,
    Freshness,
    FreshnessFigure,
    FreshnessPoint,
    FreshnessStage,
    seconds_text,
)
from openmirror_nb._core.status.records import NOT_LISTED, TableStatus
from openmirror_nb._core.storage.base import Storage

WINDOW_SECONDS = 15 * 60  # the figures cover the files of the last 15 minutes ...
WINDOW_FILES = 20  # ... and at least the last 20 files


@dataclass(frozen=True)
class _Timed:
    """One file of the log with what is known of its stages (seconds; ``None``: unknown)."""

    file: FileFreshness
    applied_at: float | None
    published: float | None
    applied: float | None
    stages: dict[str, float]


def with_freshness(
    statuses: list[TableStatus],
    landing_zone: Storage,
    *,
    applied: Mapping[str, Applied],
    now: datetime,
) -> list[TableStatus]:
    """``statuses`` with each table's ``freshness``; a table that misses its goal gets a note
    naming the slow stage, and an ``ok`` or ``pending`` badge becomes ``warning``."""
    goals = read_goals(landing_zone)
    marks = _batch_marks(landing_zone, statuses)
    out = []
    for status in statuses:
        if not status.folder:
            out.append(status)
            continue
        try:
            home = TableFolder(landing_zone, TableRef.parse(status.table))
        except InvalidNameError:  # a folder another tool named against the rule: none of ours
            out.append(status)
            continue
        found = table_freshness(
            status, home, applied=applied.get(status.folder), goal=goals.get(home.lock_name),
            batches=marks.get(status.table.casefold(), []), now=now.timestamp(),
        )  # fmt: skip
        if found.missed:
            health = "warning" if status.health in ("ok", "pending") else status.health
            status = replace(status, health=health, notes=(*status.notes, found.missed))
        out.append(replace(status, freshness=found if found.known or found.goal else None))
    return out


def _batch_marks(storage: Storage, statuses: list[TableStatus]) -> dict[str, list[tuple[BatchMark, int]]]:
    if not any(s.stream_query for s in statuses):  # only streamed tables have batch marks
        return {}
    found: dict[str, list[tuple[BatchMark, int]]] = {}
    for mark in read_all(storage):
        for table, through in mark.tables.items():
            found.setdefault(table.casefold(), []).append((mark, through))
    return found


def table_freshness(
    status: TableStatus,
    home: TableFolder,
    *,
    applied: Applied | None,
    goal: float | None,
    batches: Iterable[tuple[BatchMark, int]],
    now: float,
) -> Freshness:
    """One table's ``Freshness`` as of ``now`` (epoch seconds)."""
    log = read_log(home.storage, home.internal)
    listed = status.status != NOT_LISTED
    pending = {f.name for f in status.pending}
    done = {f.name for f in log.files if listed and f.name not in pending}
    through = (min(f.sequence or 0 for f in status.pending) - 1) if status.pending else status.last_sequence
    times, bound = _applied_times(home, log, done, applied, status, now)
    timed = [_timed(f, times.get(f.sequence)) for f in log.files]
    recent = [t for t in timed if t.file.published >= now - WINDOW_SECONDS] or []
    if len(recent) < WINDOW_FILES:
        recent = timed[-WINDOW_FILES:]
    newest = [
        *(
            t.file.source.local(t.file.source.newest)
            for t in timed
            if t.applied_at is not None and t.file.source
        ),
        *(c.source.local(c.source.newest) for c in log.checks if listed and c.through <= through),
        *(m.source.local(m.source.newest) for m, seq in batches if listed and seq <= through),
    ]
    sources = [t.file.source for t in timed if t.file.source] + [c.source for c in log.checks]
    last = sources[-1] if sources else None
    found = Freshness(
        table=status.table,
        age=max(0.0, now - max(newest)) if newest else None,
        published=_figure([t.published for t in recent]),
        applied=_figure([t.applied for t in recent]),
        applied_bound=bound if any(t.applied is not None for t in recent) else None,
        stages=_stages(recent),
        history=tuple(
            FreshnessPoint(t.file.sequence, t.file.published, t.published, t.applied) for t in recent
        ),
        goal=goal,
        source=last.kind if last else "",
        skew=last.skew if last else None,
        skew_error=last.skew_error if last else None,
    )
    return replace(found, missed=_missed(found, status))


def _applied_times(
    home: TableFolder,
    log: FreshnessLog,
    done: set[str],
    applied: Applied | None,
    status: TableStatus,
    now: float,
) -> tuple[dict[int, float], Literal["exact", "upper"]]:
    """When each applied file of the log was applied, and whether that is exact or an upper bound."""
    if applied is not None:  # the local mirror: exact, from its own record
        return {f.sequence: applied.times[f.name] for f in log.files if f.name in applied.times}, "exact"
    state = home.read_state()
    incarnation = state.incarnation if state else None
    marks = read_marks(home.storage, home.lock_name, incarnation)
    seen = status.last_sync.timestamp() if status.last_sync else now
    new = {
        f.sequence: AppliedMark(seen, "upper")
        for f in log.files
        if f.name in done and f.sequence not in marks
    }
    if new:
        kept = {f.sequence for f in log.files}
        marks = {seq: m for seq, m in {**marks, **new}.items() if seq in kept}
        write_marks(home.storage, home.lock_name, incarnation, marks)
    return {seq: m.at for seq, m in marks.items()}, "upper"


def _timed(f: FileFreshness, applied_at: float | None) -> _Timed:
    stages: dict[str, float] = {}
    published = applied = None
    if f.source is not None:
        start = f.source.local(f.source.oldest)
        published = f.published - start
        applied = applied_at - start if applied_at is not None else None
        if f.source.topic_oldest is not None and f.source.kind != "topic":
            stages[SOURCE_TO_TOPIC] = f.source.topic_oldest - start
            stages[TOPIC_TO_PUBLISHED] = f.published - f.source.topic_oldest
        elif f.source.kind == "topic":
            stages[TOPIC_TO_PUBLISHED] = published
        else:
            stages[SOURCE_TO_PUBLISHED] = published
    if applied_at is not None:
        stages[PUBLISHED_TO_APPLIED] = applied_at - f.published
    return _Timed(f, applied_at, published, applied, stages)


def _figure(values: list[float | None]) -> FreshnessFigure:
    known = [v for v in values if v is not None]
    if not known:
        return FreshnessFigure()
    latest = next(v for v in reversed(values) if v is not None)
    return FreshnessFigure(latest, percentile(known, 50), percentile(known, 95), len(known))


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile by linear interpolation between the closest ranks."""
    ordered = sorted(values)
    at = (len(ordered) - 1) * q / 100
    low = int(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def _stages(recent: list[_Timed]) -> tuple[FreshnessStage, ...]:
    order = (SOURCE_TO_TOPIC, TOPIC_TO_PUBLISHED, SOURCE_TO_PUBLISHED, PUBLISHED_TO_APPLIED)
    return tuple(
        FreshnessStage(name, _figure([t.stages.get(name) for t in recent]))
        for name in order
        if any(name in t.stages for t in recent)
    )


def _missed(found: Freshness, status: TableStatus) -> str:
    """The goal's miss in words, naming the slow stage ("" when met, unset or unknown)."""
    goal = found.goal
    if goal is None:
        return ""
    figure, word = (found.applied, "applied") if found.applied.files else (found.published, "published")
    over = []
    if found.age is not None and found.age > goal:
        over.append(f"age {seconds_text(found.age)}")
    if figure.p95 is not None and figure.p95 > goal:
        over.append(f"{word} p95 {seconds_text(figure.p95)}")
    if not over:
        return ""
    slow = max(found.stages, key=lambda s: s.figure.p95 or 0.0, default=None)
    if figure.p95 is not None and figure.p95 > goal and slow is not None:
        where = f"the slow stage is {slow.name} (p95 {seconds_text(slow.figure.p95)})"
    elif status.pending:  # recent files were quick, but the newest wait: the mirror is behind
        where = f"the slow stage is {PUBLISHED_TO_APPLIED}: {len(status.pending)} file(s) wait for the mirror"
    else:  # nothing waits at the mirror: nothing new was published (a stopped stream or job)
        where = (
            "the slow stage is before the landing zone: nothing newer was published "
            "(is the stream or the scheduled job running?)"
        )
    return f"freshness goal {seconds_text(goal)} missed: {', '.join(over)}; {where}."
