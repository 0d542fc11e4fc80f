"""The ``openmirror`` command for scripts and scheduled jobs; each verb is a few lines over the API."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from openmirror_nb import ConfigError, OpenMirrorError
from openmirror_nb._core.errors import user_line
from openmirror_nb._core.grammar import PROGS, add_verbs
from openmirror_nb._core.push_flags import feed_options, names, push_keywords

if TYPE_CHECKING:
    from openmirror_nb import MirroredDatabase, MirrorRun, MirrorStream


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROGS["cli"], description=__doc__)
    add_verbs(parser, "cli")
    verbs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    # The forms the README documented before the database became --db: still accepted, with a warning.
    hidden = argparse.SUPPRESS
    verbs["push"].add_argument("--from", dest="legacy_source", default=None, help=hidden)
    verbs["drop"].add_argument("--table", dest="legacy_table", default=None, help=hidden)
    verbs["status"].add_argument("--table", dest="legacy_table", default=None, help=hidden)
    verbs["mirror"].add_argument("legacy_path", nargs="?", default=None, help=hidden)
    return parser


def _looks_like_a_database(value: str | None) -> bool:
    # Table names hold no slash (table_names.py): a slash, a URL or a database folder is a path.
    return value is not None and (
        any(c in value for c in ("/", "\\", "://")) or Path(value, "Files", "LandingZone").is_dir()
    )


def _legacy(args: argparse.Namespace) -> None:
    """Rewrite an old form in place (``push PATH --from FILE``, ``drop PATH --table T``,
    ``status PATH [--table T]``, ``mirror PATH``) and say what to write instead."""
    verb, new = args.verb, None
    if verb == "push" and args.legacy_source is not None:
        args.db, args.df = args.df, args.legacy_source
        new = f"openmirror push {args.df} --table {args.table} ... --db {args.db}"
    elif verb == "drop" and args.legacy_table is not None:
        args.db, args.table = args.table, args.legacy_table
        new = f"openmirror drop {args.table} ... --db {args.db}"
    elif verb == "status" and (args.legacy_table is not None or _looks_like_a_database(args.table)):
        args.db, args.table = args.table, args.legacy_table
        new = f"openmirror status {args.table or ''} ... --db {args.db}".replace("  ", " ")
    elif verb == "mirror" and args.legacy_path is not None:
        args.db = args.legacy_path
        new = f"openmirror mirror ... --db {args.db}"
    if new is not None:
        print(
            f"openmirror: the database before the verb's arguments is the old form; write: {new}",
            file=sys.stderr,
        )


def _demo(args: argparse.Namespace) -> int:
    from openmirror_nb._core.demo import run_demo

    for line in run_demo(args.path, rows=args.rows):
        print(line)
    return 0


def _mirror(args: argparse.Namespace) -> int:
    """``om.LocalMirror(path).run_once()`` (``--once``), else a pass every ``--interval`` seconds."""
    return mirror_command(args.db, once=args.once, interval=5.0 if args.interval is None else args.interval)


def mirror_command(
    path: str | os.PathLike[str] | None,
    *,
    once: bool = False,
    interval: float = 5.0,
    max_iterations: int | None = None,
    echo: Callable[[str], None] = print,
) -> int:
    """Replicate the database at ``path`` once, or every ``interval`` seconds until Ctrl-C.

    Equivalent API calls: ``LocalMirror(path).run_once()`` and ``LocalMirror(path).run(interval=...)``.

    Args:
        path: The mirrored database folder (``None``: ``./openmirror-db``).
        once: Run a single pass, print it and return.
        interval: Seconds between passes when not ``once``.
        max_iterations: Stop the loop after this many passes (scripts and tests).
        echo: Where the summaries go; the loop only reports passes that did something.

    Returns:
        The process exit code: 0, or 1 when a table is ``Failed`` after a single pass.
    """
    from openmirror_nb import LocalMirror

    if interval <= 0 and not once:
        raise ConfigError(f"--interval must be a positive number of seconds, not {interval!r}.")
    mirror = LocalMirror(path)
    if once:
        run = mirror.run_once()
        echo(repr(run))
        return 1 if run.failed else 0

    def report(run: MirrorRun) -> None:
        if run.files_applied or run.failed or any(r.event for r in run.tables):
            echo(repr(run))

    echo(f"Mirroring {mirror.root} every {interval:g} s; press Ctrl-C to stop.")
    try:
        mirror.run(
            interval=interval,
            max_iterations=max_iterations,
            on_pass=report,
            on_error=lambda exc: echo(f"Mirror pass failed: {user_line(exc)}"),
        )
    except KeyboardInterrupt:
        echo("Stopped.")
    return 0


def _push(args: argparse.Namespace) -> int:
    """``db.push(spark.read.parquet(DF), table=T, keys=[K, ...], feed=om.FeedOptions(...), ...)``."""
    from openmirror_nb import connect, get_spark

    if args.df is None:
        raise ConfigError(
            "openmirror push: give the Parquet file or folder to push: openmirror push FILE --table T."
        )
    db = connect(args.db)
    print(db.push(get_spark().read.parquet(args.df), **push_keywords(args)))
    return 0


def _drop(args: argparse.Namespace) -> int:
    """``db.drop(table, wait=..., timeout=...)``."""
    from openmirror_nb import connect

    result = connect(args.db).drop(args.table, wait=args.wait, timeout=args.timeout)
    print(result)
    for path in result.removed:
        print(f"  removed {path}")
    return 0


def _status(args: argparse.Namespace) -> int:
    """``db.status(table, reconcile=...)``, with the table's freshness split by stage when one
    table is asked for; exit 1 when a table is failed or blocked."""
    from openmirror_nb import Freshness, connect

    # a mistyped path in a scheduled job must not read as a new, healthy database
    report = connect(args.db, create=False).status(args.table, reconcile=args.reconcile)
    print(json.dumps(report.to_dict(), indent=2) if args.json else str(report))
    if args.table and not args.json and len(report.tables) == 1:
        found = report.tables[0]
        print(f"\n{found.freshness or Freshness(table=found.table)}")  # where the time goes
    return 1 if report.needs_attention else 0


def _describe(args: argparse.Namespace) -> int:
    """``db.describe(T)``."""
    from openmirror_nb import connect

    print(connect(args.db).describe(args.table))
    return 0


def _tables(args: argparse.Namespace) -> int:
    """``db.tables()``, one per line."""
    from openmirror_nb import connect

    for name in connect(args.db).tables():
        print(name)
    return 0


def _run(args: argparse.Namespace) -> int:
    """``db.run_plan(om.load_plan(PLAN), parallel=N, dry_run=..., accept_suggested=...,
    reread=...)``; exit 1 when a table failed."""
    from openmirror_nb import TextProgress, connect, load_plan

    plan = load_plan(args.plan)
    db = connect(args.db)
    run = db.run_plan(
        plan,
        parallel=args.parallel,
        dry_run=args.dry_run,
        accept_suggested=args.accept_suggested,
        reread=args.reread,
        # a job's log: each table's phases and its push's end, whatever --parallel (repeats are
        # dropped per table); the summary below lists every table, also those that never pushed
        progress=TextProgress(),
    )
    print(run)
    return 1 if run.failed else 0


def _pairs(flag: str, values: list[str]) -> dict[str, str]:
    """``["a=b", ...]`` -> ``{"a": "b"}``: the repeated ``NAME=VALUE`` flags of ``kafka``."""
    pairs = dict(v.partition("=")[::2] for v in values)
    bad = [v for v in values if "=" not in v or not v.partition("=")[0].strip()]
    if bad:
        raise ConfigError(f"openmirror kafka: {flag} takes NAME=VALUE, not {bad[0]!r}.")
    return {k.strip(): v.strip() for k, v in pairs.items()}


def start_kafka(db: MirroredDatabase, args: argparse.Namespace) -> MirrorStream:
    """``db.mirror_kafka(om.Kafka(bootstrap_servers=B, topics=[T, ...], options={K: V})`` or
    ``om.EventHubs(namespace=NS, topics=..., connection_string_env=V | connection_string_secret=URL)``,
    ``tables={TOPIC: T}, schemas={T: DDL}, keys={T: [A, B]}, feed=om.FeedOptions(...)`` when
    ``--op-column``, ``checkpoint=, trigger=, starting_offsets=, max_offsets_per_trigger=)``:
    both skins' ``kafka``."""
    from openmirror_nb import EventHubs, Kafka

    if not args.topic or (args.bootstrap is None) == (args.event_hubs is None):
        raise ConfigError("openmirror kafka: give --bootstrap HOST:PORT or --event-hubs NS, and --topic T.")
    options = _pairs("--option", args.option)
    source = (
        Kafka(bootstrap_servers=args.bootstrap, topics=args.topic, options=options)
        if args.bootstrap is not None
        else EventHubs(
            namespace=args.event_hubs,
            topics=args.topic,
            connection_string_env=args.connection_string_env,
            connection_string_secret=args.connection_string_secret,
            options=options,
        )
    )
    keys = {table: names(columns) for table, columns in _pairs("--keys", args.keys).items()}
    return db.mirror_kafka(
        source,
        checkpoint=args.checkpoint,
        trigger=args.trigger,
        tables=_pairs("--map", args.map) or None,
        schemas=_pairs("--schema", args.schema),
        keys=keys or None,
        feed=feed_options(args) if args.op_column is not None else None,
        starting_offsets=args.starting_offsets,
        max_offsets_per_trigger=args.max_offsets,
    )


def _kafka(args: argparse.Namespace) -> int:
    """``db.mirror_kafka(...)`` (``start_kafka``), then ``ms.await_termination()``: a scheduled
    job's run takes what has arrived (``--trigger available_now``) and prints each table's state."""
    from openmirror_nb import connect

    db = connect(args.db)
    stream = start_kafka(db, args)
    stream.await_termination()  # a refused batch raises here: exit 2 with its line
    print(stream)
    print(db.status())
    return 0


VERBS: dict[str, Callable[[argparse.Namespace], int]] = {
    "demo": _demo,
    "mirror": _mirror,
    "push": _push,
    "status": _status,
    "describe": _describe,
    "drop": _drop,
    "tables": _tables,
    "run": _run,
    "kafka": _kafka,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``openmirror`` command; returns the exit code."""
    args = _parser().parse_args(argv)
    _legacy(args)
    try:
        return VERBS[args.verb](args)
    except OpenMirrorError as exc:
        print(f"openmirror: {type(exc).__name__}: {user_line(exc)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
