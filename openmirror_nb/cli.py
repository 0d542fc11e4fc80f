"""The ``openmirror`` command for scripts and scheduled jobs; each verb is a few lines over the API."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from openmirror_nb.errors import ConfigError, OpenMirrorError
from openmirror_nb.model import TableOptions


def _split(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="openmirror", description=__doc__)
    verbs = parser.add_subparsers(dest="verb", required=True)

    demo = verbs.add_parser("demo", help="push a sample table and a change batch, then mirror it")
    demo.add_argument(
        "path", nargs="?", default=None, help="local mirrored database (default: ./openmirror-db)"
    )
    demo.add_argument("--rows", type=int, default=10_000, help="rows in the sample table")

    mirror = verbs.add_parser("mirror", help="replicate a local landing zone into Delta tables")
    mirror.add_argument(
        "path", nargs="?", default=None, help="local mirrored database (default: ./openmirror-db)"
    )
    when = mirror.add_mutually_exclusive_group()
    when.add_argument("--once", action="store_true", help="one pass, then exit (1 if a table failed)")
    when.add_argument("--interval", type=float, default=5.0, help="seconds between passes (default 5)")

    push = verbs.add_parser("push", help="push a Parquet file or folder to a table")
    push.add_argument("path", help="mirrored database: folder or OneLake URL")
    push.add_argument("--table", required=True, help="name or schema.name")
    push.add_argument("--keys", type=_split, default=None, help="key columns, comma-separated")
    push.add_argument("--from", dest="source", required=True, help="Parquet file or folder to read")
    push.add_argument("--mode", choices=("snapshot", "changes"), default="snapshot")
    push.add_argument("--op-column", default=None, help="operation column of a change feed")
    push.add_argument("--convention", choices=("rowmarker", "sys_op", "cdf", "debezium"), default="rowmarker")
    push.add_argument("--order-by", type=_split, default=[], help="columns ordering each key's changes")
    push.add_argument("--format", choices=("parquet", "csv", "tsv", "psv"), default=None)
    push.add_argument("--compression", choices=("none", "snappy", "gzip", "zstd"), default=None)
    push.add_argument("--rows-per-file", type=int, default=1_000_000)
    drop = verbs.add_parser("drop", help="delete a table: its folder and everything kept about it")
    drop.add_argument("path", help="mirrored database: folder or OneLake URL")
    drop.add_argument("--table", required=True, help="name or schema.name")
    drop.add_argument("--wait", action="store_true", help="wait until the mirror no longer lists it")
    drop.add_argument("--timeout", type=float, default=600.0, help="seconds to wait (default 600)")

    status = verbs.add_parser("status", help="what is pending, processed, blocked or failed, per table")
    status.add_argument(
        "path",
        nargs="?",
        default=None,
        help="mirrored database: folder or OneLake URL (default: ./openmirror-db)",
    )
    status.add_argument("--table", default=None, help="one table: name or schema.name")
    status.add_argument("--json", action="store_true", help="print the report as JSON")
    status.add_argument("--reconcile", action="store_true", help="also compare row counts (needs Spark)")
    return parser


def _demo(args: argparse.Namespace) -> int:
    from openmirror_nb.demo import run_demo

    for line in run_demo(args.path, rows=args.rows):
        print(line)
    return 0


def _mirror(args: argparse.Namespace) -> int:
    from openmirror_nb.mirror.command import mirror_command

    return mirror_command(args.path, once=args.once, interval=args.interval)


def _push(args: argparse.Namespace) -> int:
    from openmirror_nb.api import connect
    from openmirror_nb.runtime import get_spark

    db = connect(args.path)
    df = get_spark().read.parquet(args.source)
    result = db.push(
        df,
        table=args.table,
        keys=args.keys,
        mode=args.mode,
        op_column=args.op_column,
        convention=args.convention,
        order_by=args.order_by,
        table_options=TableOptions(file_format=args.format) if args.format else None,
        compression=args.compression,
        rows_per_file=args.rows_per_file,
    )
    print(result)
    return 0


def _drop(args: argparse.Namespace) -> int:
    """``db.drop(table, wait=..., timeout=...)``."""
    from openmirror_nb.api import connect

    result = connect(args.path).drop(args.table, wait=args.wait, timeout=args.timeout)
    print(result)
    for path in result.removed:
        print(f"  removed {path}")
    return 0


def _status(args: argparse.Namespace) -> int:
    """``db.status(table, reconcile=...)``; exit 1 when a table is failed or blocked."""
    from openmirror_nb.api import connect
    from openmirror_nb.target import LocalTarget, parse_target

    target = parse_target(args.path)
    if isinstance(target, LocalTarget) and not target.landing_zone.is_dir():
        # connect() would create it: a mistyped path in a scheduled job must not read as healthy
        raise ConfigError(f"No mirrored database at {target.root} (it has no Files/LandingZone).")
    report = connect(args.path).status(args.table, reconcile=args.reconcile)
    print(json.dumps(report.to_dict(), indent=2) if args.json else str(report))
    return 1 if report.needs_attention else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``openmirror`` command; returns the exit code."""
    args = _parser().parse_args(argv)
    try:
        verbs = {"demo": _demo, "mirror": _mirror, "push": _push, "drop": _drop, "status": _status}
        return verbs[args.verb](args)
    except OpenMirrorError as exc:
        print(f"openmirror: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
