"""The ``%openmirror`` verbs: one function each over the API (the docstring shows the call), which
returns the API's result so the cell shows its HTML. No business logic lives here.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from openmirror_nb import ConfigError, MirrorError
from openmirror_nb._core.errors import did_you_mean, preview, user_line  # the wording every message shares
from openmirror_nb._core.magics import kafka, plans
from openmirror_nb._core.magics.parser import PROG, HelpShown, parse
from openmirror_nb._core.push_flags import feed_options, push_keywords

if TYPE_CHECKING:
    from openmirror_nb import (
        DropResult,
        LocalMirror,
        MirroredDatabase,
        MirrorRun,
        MirrorStream,
        PushResult,
        ReseedResult,
        StatusReport,
        TableInfo,
    )
    from openmirror_nb.widgets import MonitorPane, Onboarding, SchemaWizard


class MagicState:
    """What the extension keeps for one shell: the current database and the local mirrors that
    ``%openmirror mirror --start`` runs (one per database folder)."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.db: MirroredDatabase | None = None
        self.mirrors: dict[Path, LocalMirror] = {}
        self.streams: dict[str, MirrorStream] = {}

    def database(self) -> MirroredDatabase:
        """The connected database; the default one (``om.connect()``) until ``connect`` ran."""
        if self.db is None:
            from openmirror_nb import connect

            self.db = connect()
        return self.db

    def stop_mirrors(self) -> None:
        for mirror in self.mirrors.values():
            mirror.stop(timeout=60)
        for running in self.streams.values():
            running.stop()


def run(state: MagicState, line: str, cell: str | None = None) -> object:
    """Parse one ``%openmirror`` line (``cell``: the body of ``%%openmirror``) and run its verb."""
    try:
        args = parse(line)
    except HelpShown:
        return None
    if cell is not None and args.verb != "push":
        raise UsageError(f"%{PROG} {args.verb}: only push takes a cell body; use {PROG} {args.verb}.")
    args.cell = cell
    return VERBS[args.verb](state, args)


def connect(state: MagicState, args: argparse.Namespace) -> MirroredDatabase:
    """``db = om.connect(TARGET)``: later verbs use this database."""
    from openmirror_nb import connect

    state.db = connect(args.target)
    return state.db


def push(state: MagicState, args: argparse.Namespace) -> PushResult:
    """``db.push(df, table=T, keys=[K, ...], mode=..., feed=om.FeedOptions(op_column=C, convention=X,
    order_by=[A, B], update_marker=M, compact=..., strict_delete=...),
    table_options=om.TableOptions(file_format=F), compression=Z, rows_per_file=N,
    progress=False if --quiet)``; ``%%openmirror push``: ``df = spark.sql(cell)``."""
    if args.cell is not None and args.df is not None:
        raise UsageError(f"%{PROG} push: push either DF or the cell's Spark SQL, not both; drop {args.df!r}.")
    df = _cell_frame(args.cell) if args.cell is not None else _named_frame(state, args.df)
    return state.database().push(df, **push_keywords(args), progress=False if args.quiet else None)


def status(state: MagicState, args: argparse.Namespace) -> StatusReport:
    """``db.status(T, reconcile=...)``: pending, processed, blocked or failed, per table and file."""
    return state.database().status(args.table, reconcile=args.reconcile)


def monitor(state: MagicState, args: argparse.Namespace) -> MonitorPane:
    """``om.widgets.MonitorPane(db)``: the live monitoring pane (its mirror switch drives the same
    local mirror as ``%openmirror mirror --start``)."""
    from openmirror_nb.widgets import MonitorPane

    return MonitorPane(state.database())


def onboard(state: MagicState, args: argparse.Namespace) -> Onboarding:
    """``om.widgets.Onboarding(db, namespace=globals())``: pick DataFrames, declare keys, push."""
    from openmirror_nb.widgets import Onboarding

    return Onboarding(state.database(), namespace=state.shell.user_ns)


def describe(state: MagicState, args: argparse.Namespace) -> TableInfo:
    """``db.describe(T)``: keys, schema, file format, last sequence number, pushes."""
    return state.database().describe(args.table)


def drop(state: MagicState, args: argparse.Namespace) -> DropResult:
    """``db.drop(T, wait=..., timeout=S)``: delete the table folder and all kept about it."""
    return state.database().drop(args.table, wait=args.wait, timeout=args.timeout)


def schema(state: MagicState, args: argparse.Namespace) -> SchemaWizard | ReseedResult:
    """``om.widgets.SchemaWizard(db, T, df, keys=[K, ...])``: the plan, confirmed and run by mouse;
    ``--confirm T``: ``plan = db.plan_schema_change(T, df, keys=[K, ...])``, then
    ``db.apply_schema_change(plan, df, confirm=T, wait=not --no-wait)``."""
    df = _named_frame(state, args.df, verb="schema")
    db = state.database()
    if args.confirm is None:
        from openmirror_nb.widgets import SchemaWizard

        return SchemaWizard(db, args.table, df, keys=args.keys, wait=not args.no_wait)
    plan = db.plan_schema_change(args.table, df, keys=args.keys)

    def say(step: int, what: str, phase: str) -> None:
        if phase == "done":  # one line per step, as the wizard shows them
            print(f"step {step} of {len(plan.steps)}: {what}: done", flush=True)

    return db.apply_schema_change(plan, df, confirm=args.confirm, wait=not args.no_wait, on_step=say)


def tables(state: MagicState, args: argparse.Namespace) -> list[str]:
    """``db.tables()``: the tables of the landing zone."""
    return state.database().tables()


def mirror(state: MagicState, args: argparse.Namespace) -> MirrorRun | LocalMirror:
    """``om.LocalMirror(path).run_once()``; ``--start``: ``mirror.start(interval=S)``; ``--stop``:
    ``mirror.stop()``. Local databases only: the service mirrors OneLake ones."""
    db = state.database()
    local = db.local_mirror
    if local is None:
        raise UsageError(
            f"{PROG} mirror: {db.target} is on OneLake; the service mirrors OneLake databases itself."
        )
    if args.interval is not None and not args.start:
        raise UsageError(f"{PROG} mirror: --interval goes with --start.")
    state.mirrors[local.root] = local  # stopped when the extension is unloaded
    if args.start:
        if local.is_running:
            raise MirrorError(
                f"The local mirror of {local.root} is already running; {PROG} mirror --stop ends it."
            )
        local.start(interval=5.0 if args.interval is None else args.interval)
        return local
    if args.stop:
        local.stop(timeout=60)
        return local
    return local.run_once()


def stream(state: MagicState, args: argparse.Namespace) -> MirrorStream | list[MirrorStream]:
    """``db.mirror_stream(DF, table=T, checkpoint=PATH, keys=[K, ...], feed=om.FeedOptions(op_column=C,
    convention=X, order_by=[A, B], ...), trigger=W)``; ``--list``: the streams started here; ``--stop [ID]``:
    ``ms.stop()`` of one (its query id) or all."""
    if args.list:
        return list(state.streams.values())
    if args.stop is not None:
        chosen = [s for key, s in state.streams.items() if args.stop in ("all", key)]
        if not chosen:
            raise UsageError(
                f"{PROG} stream --stop: no stream {args.stop!r} was started here; {PROG} stream --list."
            )
        for running in chosen:
            running.stop()
        return chosen
    if args.df is None or args.table is None:
        raise UsageError(f"{PROG} stream: give DF and --table T (or --list, --stop).")
    df = _named_frame(state, args.df, verb="stream")
    started = state.database().mirror_stream(
        df,
        table=args.table,
        keys=args.keys,
        feed=feed_options(args),
        checkpoint=args.checkpoint,
        trigger=args.trigger,
    )
    state.streams[str(started.query.id)] = started
    return started


VERBS: dict[str, Callable[[MagicState, argparse.Namespace], object]] = {
    "connect": connect,
    "push": push,
    "status": status,
    "monitor": monitor,
    "onboard": onboard,
    "describe": describe,
    "drop": drop,
    "schema": schema,
    "tables": tables,
    "mirror": mirror,
    "stream": stream,
    "kafka": kafka.kafka,
    "discover": plans.discover,
    "run": plans.run,
}


def is_frame(value: object) -> bool:
    """A Spark (classic or Connect) or pandas DataFrame, or a pyarrow Table; checked by class so
    that no library is imported for the check."""
    cls = type(value)
    return cls.__module__.partition(".")[0] in ("pyspark", "pandas", "pyarrow") and cls.__name__ in (
        "DataFrame",
        "Table",
    )


def _named_frame(state: MagicState, name: str | None, *, verb: str = "push") -> Any:
    """The DataFrame a verb names: a notebook variable, else a temp view or catalog table."""
    if name is None:
        raise UsageError(
            f"{PROG} push: the following arguments are required: DF (or a cell of Spark SQL "
            f"under %{PROG} push)"
        )
    namespace = state.shell.user_ns
    if name in namespace:
        value = namespace[name]
        if is_frame(value):
            return value
        raise UsageError(
            f"{PROG} {verb}: {name!r} is not a DataFrame but {type(value).__name__}; "
            "pass a Spark or pandas DataFrame, a temp view or a table."
        )
    spark = _active_spark()
    if spark is not None and _table_exists(spark, name):
        return spark.table(name)
    frames = sorted(k for k, v in namespace.items() if not k.startswith("_") and is_frame(v))
    hint = did_you_mean(name, frames) or (f" DataFrames here: {preview(frames)}." if frames else "")
    raise UsageError(f"{PROG} {verb}: no DataFrame, temp view or table is named {name!r}.{hint}")


def _cell_frame(sql: str) -> Any:
    """``spark.sql(cell)``; a query Spark rejects is one line, not a Java stack."""
    if not sql.strip():
        raise UsageError(f"%{PROG} push: the cell is empty; write the Spark SQL whose result to push.")
    from pyspark.errors import PySparkException

    from openmirror_nb import get_spark

    try:
        return get_spark().sql(sql)
    except PySparkException as exc:
        raise ConfigError(user_line(exc, "Spark rejected the cell's SQL")) from None


def _active_spark() -> Any:
    """The active Spark session, if pyspark is loaded and one runs: an unknown name must not
    start a JVM just to find there is no such table."""
    if "pyspark" not in sys.modules:
        return None
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession()


def _table_exists(spark: Any, name: str) -> bool:
    try:
        return bool(spark.catalog.tableExists(name))
    except Exception:  # not a valid table name for Spark's parser: then it is no table either
        return False
