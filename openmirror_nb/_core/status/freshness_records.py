"""How fresh a table is, as ``db.status()`` and ``db.freshness(table)`` give it (built in
``status.freshness`` from the summaries of ``landing_zone.freshness_log``).

Two figures per published file, in seconds: *published*, from the oldest change the file carries
(its source time) to the file being published, and *applied*, to the mirror applying it. The
*age* is now minus the newest source time the mirror has applied (a heartbeat's counts): it keeps
growing while a stream stands still. ``None`` is unknown, never ``0``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from openmirror_nb._core.status.render import ago

# The stages a change goes through, in order; a change that came through no Kafka topic has one
# stage before the landing zone (SOURCE_TO_PUBLISHED) instead of the first two.
SOURCE_TO_TOPIC = "source → topic"
TOPIC_TO_PUBLISHED = "topic → published"
SOURCE_TO_PUBLISHED = "source → published"
PUBLISHED_TO_APPLIED = "published → applied"


@dataclass(frozen=True)
class FreshnessFigure:
    """One figure over the recent files (those of the last 15 minutes, at least the last 20):
    the newest file's, the median and the 95th percentile, in seconds, and how many files."""

    latest: float | None = None
    p50: float | None = None
    p95: float | None = None
    files: int = 0


@dataclass(frozen=True)
class FreshnessStage:
    """Where the time goes, one stage: its name (``SOURCE_TO_TOPIC`` ...) and its figure."""

    name: str
    figure: FreshnessFigure


@dataclass(frozen=True)
class FreshnessPoint:
    """One recent file: its sequence number, when it was published (epoch seconds) and its two
    figures (``None`` where unknown)."""

    sequence: int
    published_at: float
    published: float | None
    applied: float | None


@dataclass(frozen=True)
class Freshness:
    """How fresh one table is.

    Attributes:
        table: ``name`` or ``schema.name``.
        age: Seconds from the newest source time the mirror has applied to now (``None``: no
            file or heartbeat with a source time applied yet).
        published: The *published* figure; ``applied``: the *applied* figure.
        applied_bound: ``"exact"`` (the local mirror says when it applied each file) or
            ``"upper"`` (Fabric: the service's ``lastSyncDateTime`` at the first status read that
            showed the file processed, which is no earlier than the apply), ``None`` if unknown.
        stages: The time split by stage, in order (``FreshnessStage``).
        history: The recent files, oldest first (``FreshnessPoint``).
        goal: The table's freshness goal in seconds (``db.set_freshness_goal``), if any.
        missed: The goal's miss in words, naming the slow stage; empty when met or unknown.
        source: What the source times are: ``commit`` (the source's commit time), ``read`` (a
            snapshot's read time), ``topic`` (only Kafka's message time), or ``""`` (none known).
        skew: The source's clock minus this machine's, in seconds, as last measured (source times
            are corrected by it), ``skew_error`` its ± bound; ``None``: unknown (not corrected).
    """

    table: str
    age: float | None = None
    published: FreshnessFigure = FreshnessFigure()
    applied: FreshnessFigure = FreshnessFigure()
    applied_bound: Literal["exact", "upper"] | None = None
    stages: tuple[FreshnessStage, ...] = ()
    history: tuple[FreshnessPoint, ...] = ()
    goal: float | None = None
    missed: str = ""
    source: str = ""
    skew: float | None = None
    skew_error: float | None = None

    @property
    def known(self) -> bool:
        """Whether anything about the table's freshness is known."""
        return self.age is not None or self.published.files > 0 or bool(self.stages)

    def __str__(self) -> str:
        """Where the time goes, as text: the facts, then one line per stage."""
        return split_text(self)

    @property
    def text(self) -> str:
        """One line: the age, then the p95 of the applied figure (or the published one)."""
        if not self.known:
            return "unknown"
        parts = [f"age {seconds_text(self.age)}"]
        figure, word = (self.applied, "applied") if self.applied.files else (self.published, "published")
        if figure.files:
            bound = " ≤" if word == "applied" and self.applied_bound == "upper" else ""
            parts.append(f"{word} p95{bound} {seconds_text(figure.p95)}")
        return " · ".join(parts)


def seconds_text(value: float | None) -> str:
    """A duration in words for a cell: tenths below 10 s, else as ``ago`` says it; ``-`` when
    unknown."""
    if value is None:
        return "-"
    return f"{value:.1f} s" if value < 10 else ago(value)


BOUND_WORDS = {
    "exact": "exact: when the local mirror applied each file",
    "upper": (
        "upper bound: the service's lastSyncDateTime at the first status read that showed the file processed"
    ),
}
SOURCE_WORDS = {
    "commit": "the source's commit times",
    "read": "the snapshot's read time",
    "topic": "Kafka's message times (the source gave no commit time)",
}


def facts(f: Freshness) -> list[tuple[str, str]]:
    """The detail's facts in words: the age, the goal, the applied figure's bound, the source
    times and the clock skew."""
    if f.goal is None:
        goal = "none set (db.set_freshness_goal)"
    else:
        goal = f"{seconds_text(f.goal)}, " + (f"missed: {f.missed}" if f.missed else "met")
    if f.skew is None:
        skew = "unknown (source times not corrected)"
    else:
        error = f" ± {f.skew_error:.2f} s" if f.skew_error is not None else ""
        skew = f"{f.skew:+.2f} s{error} (the source's clock minus this machine's; corrected)"
    return [
        ("age", seconds_text(f.age) if f.age is not None else "unknown"),
        ("goal", goal),
        ("applied figure", BOUND_WORDS.get(f.applied_bound or "", "unknown")),
        ("source times", SOURCE_WORDS.get(f.source, "unknown")),
        ("clock skew", skew),
    ]


def split_rows(f: Freshness) -> list[tuple[str, FreshnessFigure, str]]:
    """The rows of the split: each stage, then the two figures end to end (with their class)."""
    bound = ", an upper bound" if f.applied_bound == "upper" else ""
    return [
        *((s.name, s.figure, "om-stage") for s in f.stages),
        ("published (source → published)", f.published, "om-total"),
        (f"applied (source → applied{bound})", f.applied, "om-total"),
    ]


def split_text(f: Freshness | None) -> str:
    """Where the time goes, as text (``openmirror status TABLE`` prints it under the report)."""
    if f is None or not f.known:
        return "Freshness: unknown, nothing measured yet."
    width = max(len(name) for name, _, _ in split_rows(f))
    lines = [f"Freshness of {f.table}:"]
    lines += [f"  {k + ':':<16}{v}" for k, v in facts(f)]
    lines.append(f"  {'stage':<{width}}  {'latest':>8} {'p50':>8} {'p95':>8} {'files':>6}")
    for name, fig, _ in split_rows(f):
        values = (seconds_text(fig.latest), seconds_text(fig.p50), seconds_text(fig.p95))
        lines.append(f"  {name:<{width}}  {values[0]:>8} {values[1]:>8} {values[2]:>8} {fig.files:>6,}")
    return "\n".join(lines)
