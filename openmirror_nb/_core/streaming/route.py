"""A routed micro-batch: one column names each row's table, and the whole batch is checked before
any table publishes.

Each table gets the batch's rows of its route value, without the route column; its published
columns are the batch's minus the route, operation and ordering columns, or the ones ``columns=``
lists for it. Every check a push makes before staging (names, types, keys, the table's schema and
keys) and the checks of the rows (NULL keys, operation values) run on every table of the batch first,
so a bad row anywhere stops the batch with nothing of it published; each table's push is handed
what they found, and checks the table again only if it changed meanwhile. Tables are then applied
``parallel`` at a time, each on a thread of its own and each skipping a batch it holds already.
Every table's push runs to its end (applied whole, or not at all) before the first error is
raised, so a failure or a crash leaves each table with the batch applied once or not at all, and
Spark's replay of the batch applies it to the tables that miss it.
"""

from __future__ import annotations

import concurrent.futures as cf
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from openmirror_nb._core.errors import (
    ChangeFeedError,
    ConfigError,
    KeyColumnsError,
    SchemaChangeError,
    did_you_mean,
)
from openmirror_nb._core.identifiers import quoted
from openmirror_nb._core.landing_zone.publish import crash_point
from openmirror_nb._core.landing_zone.push_state import StreamBatch
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.model import ROW_MARKER, TableRef
from openmirror_nb._core.pipeline.feeds.changes import INVALID_MARKER
from openmirror_nb._core.pipeline.push import checks, checks_before
from openmirror_nb._core.pipeline.push.checks_before import Checked
from openmirror_nb._core.pipeline.push.request import PushRequest, invalid_ops
from openmirror_nb._core.pipeline.push.stage import StagedStats
from openmirror_nb._core.storage.base import Storage

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

# Applies one table's part of the batch, with what the batch's checks found for it (``None``: not
# checked, as the table holds the batch already).
ApplyOne = Callable[["DataFrame", PushRequest, Checked | None], None]


@dataclass(frozen=True)
class Router:
    """How a routed sink splits a batch: ``column`` names the table; ``base`` carries the shared
    change options; ``keys`` and ``columns`` are per route value; ``parallel`` tables are
    applied at a time."""

    storage: Storage
    column: str
    base: PushRequest
    keys: Mapping[str, tuple[str, ...]]
    columns: Mapping[str, tuple[str, ...]]
    parallel: int = 4

    @classmethod
    def create(
        cls,
        storage: Storage,
        *,
        column: str,
        base: PushRequest,
        keys: Mapping[str, Sequence[str]],
        columns: Mapping[str, Sequence[str]] | None,
        parallel: int = 4,
    ) -> Router:
        for name, given in {**keys, **(columns or {})}.items():
            TableRef.parse(name)  # a route value must be a valid table name
            if isinstance(given, str):
                raise ConfigError(f"keys and columns take lists per table, e.g. {{{name!r}: ['id']}}.")
        unknown = sorted(set(columns or {}) - set(keys))
        if unknown:
            raise ConfigError(f"columns= names tables {unknown} that keys= does not; give their keys too.")
        return cls(
            storage,
            column,
            base,
            {t: tuple(k) for t, k in keys.items()},
            {t: tuple(c) for t, c in (columns or {}).items()},
            parallel,
        )

    def apply(self, df: DataFrame, batch: StreamBatch, apply_one: ApplyOne) -> None:
        """Check every table's rows of the batch, then apply them, ``parallel`` tables at a time;
        each table's push gets what its checks found, so it does not check the table again."""
        if self.column not in df.columns:
            raise ConfigError(
                f"Route column {self.column!r} is not in the stream (columns: {', '.join(df.columns)})."
                + did_you_mean(self.column, df.columns)
            )
        df = df.persist()  # read once per table and by the checks: not once per read from the source
        try:
            parts = {v: (self._part(df, v), self._request(v)) for v in self._values(df)}
            checked = self._check(parts, batch)
            self._apply_all([(p, r, checked.get(v)) for v, (p, r) in parts.items()], apply_one)
        finally:
            df.unpersist()  # only once every table's push has ended: none reads it any more

    def _apply_all(
        self, parts: list[tuple[DataFrame, PushRequest, Checked | None]], apply_one: ApplyOne
    ) -> None:
        """Apply each table's part; on threads when ``parallel`` allows (one at a time, they go in
        route order and the first error stops the rest). Each thread waits for its own push, and
        the pool for every thread, before the first error (in route order) is raised."""

        def one(i: int, part: DataFrame, request: PushRequest, checked: Checked | None) -> None:
            apply_one(part, request, checked)
            if i < len(parts) - 1:
                crash_point("between_tables")  # this table has the batch; a later one may not

        workers = min(self.parallel, len(parts))
        if workers <= 1:
            for i, (part, request, checked) in enumerate(parts):
                one(i, part, request, checked)
            return
        with cf.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="openmirror-stream") as pool:
            futures = [pool.submit(one, i, *part) for i, part in enumerate(parts)]
        for future in futures:
            error = future.exception()
            if error is not None:
                raise error

    def _values(self, df: DataFrame) -> list[str]:
        from pyspark.sql import functions as F

        rows = df.groupBy(F.col(quoted(self.column)).alias("v")).count().collect()
        missing = [r["count"] for r in rows if r["v"] is None]
        if missing:
            raise ConfigError(
                f"{missing[0]:,} row(s) of this batch have a NULL route column {self.column!r}, so they "
                "name no table; filter them out or fill the column before the sink."
            )
        return sorted(str(r["v"]) for r in rows)

    def _request(self, value: str) -> PushRequest:
        ref = TableRef.parse(value)
        keys = self.keys.get(value)
        if keys is None and TableFolder(self.storage, ref).read_metadata() is None:
            raise KeyColumnsError(
                f"Route value {value!r} names no table in keys= and no existing table; add its keys, "
                f"e.g. keys={{..., {value!r}: ['id']}}, or filter its rows out."
            )
        return replace(self.base, table=ref, keys=keys, unpublished=self._unpublished(value))

    def _unpublished(self, value: str) -> tuple[str, ...]:
        listed = self.columns.get(value)
        if self.base.feed.convention == "debezium":
            return ()  # its ordering fields are never published anyway
        return tuple(c for c in self.base.feed.order_by if listed is None or c not in listed)

    def _part(self, df: DataFrame, value: str) -> DataFrame:
        from pyspark.sql import functions as F

        part = df.where(F.col(quoted(self.column)) == value).drop(self.column)
        listed = self.columns.get(value)
        if listed is None:
            return part
        # the operation, ordering and (a flat Debezium feed's) "__" fields go along unpublished
        feed = self.base.feed
        flat = [c for c in part.columns if c.startswith("__")] if feed.convention == "debezium" else []
        wanted = (feed.op, *feed.order_by, *flat)
        extra = [c for c in dict.fromkeys(wanted) if c in part.columns and c not in listed]
        missing = [c for c in listed if c not in part.columns]
        if missing:
            raise ConfigError(
                f"columns= of table {value!r} names {missing}, which the stream does not have "
                f"(columns: {', '.join(part.columns)})." + did_you_mean(missing[0], part.columns)
            )
        return part.select(*[F.col(quoted(c)) for c in (*listed, *extra)])

    def _check(
        self,
        parts: dict[str, tuple[DataFrame, PushRequest]],
        batch: StreamBatch,
        aside: Callable[[str, SchemaChangeError], bool] | None = None,
    ) -> dict[str, Checked]:
        """Every check a push makes before it publishes, for every table not holding the batch:
        ``checks_before.check_frame`` (what it found, per route value, goes to the table's push), then
        the rows' NULL keys and operation values, of every table in one job. A table whose schema
        change ``aside`` takes (it returns true) is taken out of ``parts``, unchecked."""
        from pyspark.sql import functions as F

        probes, todo = [], []
        for value, (part, request) in list(parts.items()):
            home = TableFolder(self.storage, request.table)
            state, meta = home.read_state(), home.read_metadata()
            held = state.applied(batch.query) if state else None
            if held is not None and held >= batch.batch:
                continue  # it is skipped under its lock
            try:
                checked = checks_before.check_frame(part, request, meta, state)
            except SchemaChangeError as exc:
                if aside is None or not aside(value, exc):
                    raise
                del parts[value]
                continue
            null_key = F.lit(False)
            for k in checked.keys:
                null_key = null_key | F.col(quoted(k)).isNull()
            # an append's rows carry no marker: they are inserts
            marked = ROW_MARKER in checked.shaped.columns
            probes.append(
                checked.shaped.select(
                    F.lit(value).alias("t"),
                    ((F.col(ROW_MARKER) == INVALID_MARKER) if marked else F.lit(False))
                    .cast("long")
                    .alias("bad"),
                    null_key.cast("long").alias("nul"),
                )
            )
            todo.append((value, part, request, checked))
        if not probes:
            return {}
        union = probes[0]
        for probe in probes[1:]:
            union = union.unionByName(probe)
        found = {
            r["t"]: r
            for r in union.groupBy("t").agg(F.sum("bad").alias("bad"), F.sum("nul").alias("nul")).collect()
        }
        for value, part, request, checked in todo:
            row = found.get(value)
            bad, nul = (int(row["bad"] or 0), int(row["nul"] or 0)) if row else (0, 0)
            shown = invalid_ops(part, request) if bad else ()
            try:
                checks.check_stats(
                    StagedStats(0, {INVALID_MARKER: bad}, null_key_rows=nul),
                    keys=checked.keys,
                    table=str(request.table),
                    invalid_values=shown,
                )
            except (ChangeFeedError, KeyColumnsError) as exc:
                raise type(exc)(
                    f"{exc} Nothing of batch {batch.batch} was published (routed batch)."
                ) from None
        return {value: checked for value, _, _, checked in todo}
