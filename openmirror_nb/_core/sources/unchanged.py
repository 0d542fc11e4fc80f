"""Whether a run of a plan can leave a table unread (issue 39): its source says the table has not
changed since the last run that read and pushed it (``Source.version``), the plan mirrors it as
that run did, and the mirrored table is where that run left it.

The version is asked before the read and recorded only once the push succeeded
(``landing_zone.source_versions``), so a change made during the read gives the next run another
version and is read then. A source that cannot say (``None``), or fails to, has its table read as
before; so has every table of a run with ``reread=True``.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from openmirror_nb._core.errors import user_line
from openmirror_nb._core.landing_zone.source_versions import (
    SourceVersion,
    clear_source_version,
    read_source_version,
    record_source_version,
)
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.model import PushResult, SyncResult

if TYPE_CHECKING:
    from openmirror_nb._core.sources.plan import PlannedTable
    from openmirror_nb._core.sources.runner import Runner
    from openmirror_nb._core.sources.table import Source
    from openmirror_nb._core.storage.base import Storage

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Asked:
    """What the source said of a table before the run read it: its ``version`` (``None``: it
    cannot say), the plan's ``fingerprint`` of the table, and when it was asked."""

    version: str | None
    fingerprint: str
    at: datetime


def ask(source: Source, planned: PlannedTable) -> Asked:
    """The source's version of ``planned``'s table, now; a source that fails to say is logged and
    read as one that cannot."""
    version = None
    says = getattr(source, "version", None)  # a source class older than the member has none
    if says is not None:
        try:
            said = says(planned.source)
            version = None if said is None else str(said)
        except Exception as exc:  # only an optimisation failed: the table is read as before
            log.warning(
                "Source %r cannot say whether table %s changed (%s); it is read",
                source,
                planned.source,
                user_line(exc, hide=source.hide),
            )
    return Asked(version, fingerprint(source, planned), datetime.now(UTC))


def fingerprint(source: Source, planned: PlannedTable) -> str:
    """What the push of a table depends on besides its rows: the source and the table, how the
    plan mirrors it, and the package that reads it (a new release may read values otherwise)."""
    doc = {
        "package": _package_version(),
        "source": source.to_dict(),
        "table": planned.source,
        "strategy": planned.strategy,
        "keys": list(planned.keys),
        "watermark": planned.watermark,
        "detect_deletes": planned.detect_deletes,
        "feed": repr(planned.feed),
        "types": sorted((getattr(planned, "types", None) or {}).items()),
    }
    text = json.dumps(doc, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def unchanged(runner: Runner, planned: PlannedTable, asked: Asked) -> str | None:
    """Why the run leaves ``planned`` unread (one line), or ``None`` when it reads it. A table left
    unread is left alone: nothing is written, in its folder or beside it, so no lock is taken."""
    if asked.version is None or runner.reread:
        return None
    held = read_source_version(runner.storage, planned.table)
    if held is None or held.version != asked.version or held.plan != asked.fingerprint:
        return None
    return _reason(held) if _left(TableFolder.of(runner.storage, planned.table), held) else None


def _left(home: TableFolder, held: SourceVersion) -> bool:
    """The mirrored table is as the recorded run left it: the same incarnation at the same last
    sequence number, and no push of it decided but unfinished (its next push finishes that)."""
    state = home.read_state()
    return (
        state is not None
        and state.incarnation == held.incarnation
        and state.last_sequence_number == held.sequence
        and home.has_metadata()
        and not home.storage.exists(home.journal_path)
    )


def _reason(held: SourceVersion) -> str:
    when = held.at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return f"not read: the source says it has not changed since the run of {when} (version {held.version})"


def remember(
    storage: Storage, planned: PlannedTable, asked: Asked | None, result: PushResult | SyncResult | None
) -> None:
    """After a successful push: record ``asked`` with where the push left the table, or forget the
    table's record (``asked`` is ``None`` after a failure, or its source cannot say). A record that
    cannot be written changes nothing of the run (the next one reads the table); it is logged."""
    try:
        record = _record(storage, planned, asked, result)
        if record is None:
            clear_source_version(storage, planned.table)
        else:
            record_source_version(storage, record)
    except Exception:
        log.exception("Recording the source version of %s failed", planned.table)


def _record(
    storage: Storage, planned: PlannedTable, asked: Asked | None, result: PushResult | SyncResult | None
) -> SourceVersion | None:
    if asked is None or asked.version is None:
        return None
    state = TableFolder.of(storage, planned.table).read_state()
    if state is None:
        return None
    push = result.push if isinstance(result, SyncResult) else result
    published = push.sequence_numbers if push is not None else ()
    if published and max(published) != state.last_sequence_number:
        return None  # another writer pushed to the table since: its rows are not the source's
    return SourceVersion(
        table=planned.table,
        version=asked.version,
        plan=asked.fingerprint,
        incarnation=state.incarnation,
        sequence=state.last_sequence_number,
        at=asked.at,
    )


def _package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("openmirror-nb")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"
