"""``db.sync_delta``: keep a mirrored table in step with a Delta table, version by version.

The first sync publishes the source's current version as a snapshot; each later one publishes
the change data feed since the version the table holds, and the new version is committed in the
same push state as the files (``PushState.source_version``), so a crash can neither skip nor
repeat a version. A source without a change data feed over that range — the feed was never
enabled, or the versions were vacuumed or their log cleaned up — is synced with a snapshot diff
instead, and the result says why. A schema change the mirror cannot absorb stops the sync
before anything is published, with the reseed to run (``pipeline.delta.schema_check``).

The source is read with Spark's Delta reader where the session has Delta (Fabric, Databricks),
else by ``pipeline.delta``: the log through ``deltalake``, the Parquet files through Spark
(``pipeline.delta.source``; ``SyncResult.reader`` says which). Neither pulls the table or the
feed into the driver. A feed that is there but fails to read stops the sync (``SourceError``):
only a feed that is not there is replaced by a diff (``pipeline.delta.gone``).

Each push carries the commit times of the versions it brings (``pipeline.delta.commit_times``),
for the table's freshness; a sync that finds no new version records that the table was current
as of when it asked the source (a freshness check).
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from openmirror_nb._core.errors import (
    ConfigError,
    LockTimeoutError,
    OpenMirrorError,
    SourceError,
    StorageError,
    scrub,
    user_line,
)
from openmirror_nb._core.landing_zone.freshness_log import Check, SourceTimes, record_check
from openmirror_nb._core.landing_zone.lifecycle import settle
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.model import SyncResult
from openmirror_nb._core.pipeline.delta.commit_times import sync_times
from openmirror_nb._core.pipeline.delta.gone import feed_gone
from openmirror_nb._core.pipeline.delta.schema_check import check_source_schema, source_columns
from openmirror_nb._core.pipeline.delta.source import DeltaSource
from openmirror_nb._core.pipeline.push.request import PushRequest
from openmirror_nb._core.pipeline.push.run import run_push
from openmirror_nb._core.storage.base import Storage

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

CDF_OP = "_change_type"
log = logging.getLogger("openmirror_nb")


def sync_delta(storage: Storage, source: DeltaSource, request: PushRequest) -> SyncResult:
    """Bring ``request.table`` to the source's current version (see the module docstring).

    ``request`` carries the push options; its mode, feed convention and source mark are set here.
    """
    home = TableFolder(storage, request.table)
    with home.lock(timeout=request.lock_timeout):
        settle(home)  # a sync that died after deciding its push is finished first: no repeat
        state = home.read_state()
        meta = home.read_metadata()
    held = state.source_version if state and state.source == source.uri else None
    asked = time.time()  # every commit made before this is in version ``now``
    now = source.version()
    name = str(request.table)
    done = SyncResult(name, source.uri, held, now, "none", reader=source.reader)
    if held is not None and now == held:
        _current(home, source.uri, now, asked, request.lock_timeout)
        return done
    if held is not None and now < held:
        raise ConfigError(
            f"{source.uri} is at version {now}, before version {held} that table {name} holds; "
            "was the source restored or replaced? Drop the table (db.drop) and sync again."
        )
    if state is not None:
        check_source_schema(
            source.schema_at(now, held=held, held_at=state.source_columns if held is not None else ()),
            uri=source.uri,
            table=name,
            pushed=state.schema,
            keys=tuple(state.key_columns),
            delimited=bool(meta and meta.options.is_delimited),
        )
    marked = replace(request, source=(source.uri, now), source_columns=source_columns(source.columns(now)))
    fallback = None
    if held is not None:
        feed = replace(marked.feed, convention="cdf", op_column=CDF_OP)
        changes = replace(marked, mode="changes", feed=feed, source_after=held)
        try:
            feed_rows = source.changes(held, now)  # reads the range's commits, and their times
            changes = replace(changes, source_times=sync_times(source, held, now, asked=asked))
            pushed = run_push(storage, feed_rows, changes)
        except Exception as exc:  # the feed is not there (found now or mid-job), or a real failure
            why = feed_gone(exc, source.uri)
            if why is None:
                raise _failed(exc, source.uri, held, now) from None
            fallback = scrub(f"no change data feed for versions {held + 1}..{now}: {why}")
            log.warning(
                "Table %s follows %s: %s; synced with a snapshot diff instead", name, source.uri, fallback
            )
        else:
            return replace(done, how="changes", push=pushed)
    snapshot = replace(
        marked,
        source_after=state.source_version if state else None,
        source_fallback=fallback,
        source_times=sync_times(source, held, now, asked=asked),
    )
    pushed = run_push(storage, source.snapshot(now), snapshot)
    return replace(done, how="snapshot", fallback=fallback, push=pushed)


def _current(home: TableFolder, uri: str, version: int, asked: float, lock_timeout: float) -> None:
    """A sync that found no new version records that the table was current with its source as of
    ``asked`` (a freshness check: its age does not grow while the source is idle and synced)."""
    try:
        with home.lock(timeout=lock_timeout):
            state = home.read_state()
            if state is not None and state.source == uri and state.source_version == version:
                check = Check(state.last_sequence_number, time.time(), SourceTimes.read_at(asked))
                record_check(home.storage, home.internal, check)
    except (LockTimeoutError, StorageError) as exc:  # it only measures: the sync itself is done
        log.info("Table %s: its freshness check was not recorded: %s", home.ref, user_line(exc))


def _failed(exc: Exception, uri: str, held: int, now: int) -> Exception:
    """A failure that is not a missing feed, as one scrubbed line (an ``OpenMirrorError`` as it is)."""
    if isinstance(exc, OpenMirrorError):
        return exc
    return SourceError(
        user_line(
            exc,
            f"Reading the change data feed of {uri} (versions {held + 1}..{now}) failed; nothing was "
            f"published and the table still holds version {held}",
        )
    )


def read_delta(source: str, *, version: int | None = None) -> DataFrame:
    """A Delta table (path or URI) as a Spark DataFrame, at ``version`` (default: the latest).

    Read by Spark's Delta reader where the session has Delta (Fabric), else by openmirror_nb's
    own (deletion vectors, column mapping, partitions, checkpoints; the rows stay on Spark).
    This is how a reseed of a table that ``sync_delta`` follows gets its data.

    Example:
        >>> df = om.read_delta("Tables/orders")
        >>> db.apply_schema_change(db.plan_schema_change("sales.orders", df), df, confirm="sales.orders")
    """
    from openmirror_nb._core.runtime import get_spark

    delta = DeltaSource.open(source, get_spark())
    return delta.snapshot(delta.version() if version is None else version)
