"""The ``%openmirror`` grammar: argparse subparsers whose errors are IPython ``UsageError``s.

jupysql's ``CmdParser`` pattern: ``error()`` raises instead of exiting the kernel, and the message
names the verb, the problem and the usage line.
"""

from __future__ import annotations

import argparse
import shlex
from typing import NoReturn

from IPython.core.error import UsageError

PROG = "%openmirror"
CONVENTIONS = ("rowmarker", "sys_op", "cdf", "debezium")
USAGE = {
    "connect": "[TARGET]",
    "push": "DF --table T [--keys K,...] [--mode changes --op-column C --convention X] "
    "[--order-by A,B] [--compact] [--quiet]",
    "status": "[T] [--reconcile]",
    "monitor": "",
    "onboard": "",
    "describe": "T",
    "drop": "T [--wait] [--timeout S]",
    "schema": "T DF [--keys K,...] [--confirm T] [--no-wait]",
    "tables": "",
    "mirror": "[--once | --start [--interval S] | --stop]",
}


class HelpShown(Exception):
    """``-h`` printed the help: the magic ends there, without a result or an error."""


class MagicParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` that raises ``UsageError`` rather than exiting the process."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}\n{self.format_usage().strip()}")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if status:
            raise UsageError(f"{self.prog}: {(message or 'invalid arguments').strip()}")
        raise HelpShown


def _names(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def _seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds (0 or more)")
    return seconds


def build_parser() -> MagicParser:
    """The parser of every verb; each subparser's ``prog`` is ``%openmirror <verb>``."""
    parser = MagicParser(prog=PROG, description="Mirror DataFrames into an open-mirrored database.")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    def verb(name: str, text: str) -> MagicParser:
        sub: MagicParser = verbs.add_parser(name, help=text, usage=f"%(prog)s {USAGE[name]}".strip())
        return sub

    connect = verb("connect", "open a mirrored database; later verbs use it (default ./openmirror-db)")
    connect.add_argument("target", nargs="?", default=None, help="folder, file:// or OneLake URL")

    push = verb("push", "push a DataFrame, a table or view, or the cell's Spark SQL to a table")
    push.add_argument("df", nargs="?", default=None, metavar="DF", help="variable, temp view or table")
    push.add_argument("--table", required=True, help="name or schema.name")
    push.add_argument("--keys", type=_names, default=None, help="key columns, comma-separated")
    push.add_argument("--mode", choices=("snapshot", "changes"), default="snapshot")
    push.add_argument("--op-column", default=None, help="operation column of a change feed")
    push.add_argument("--convention", choices=CONVENTIONS, default="rowmarker")
    push.add_argument("--order-by", type=_names, default=[], help="columns ordering each key's changes")
    push.add_argument("--compact", action="store_true", help="keep only each key's net change")
    push.add_argument("--quiet", action="store_true", help="no progress display")

    status = verb("status", "what is pending, processed, blocked or failed, per table")
    status.add_argument("table", nargs="?", default=None, metavar="T")
    status.add_argument("--reconcile", action="store_true", help="also compare row counts (Spark)")

    verb("monitor", "the live monitoring pane")
    verb("onboard", "the onboarding panel: pick DataFrames, declare keys, push")
    verb("describe", "keys, schema, format and push state of a table").add_argument("table", metavar="T")
    drop = verb("drop", "delete a table: its folder and everything kept about it")
    drop.add_argument("table", metavar="T")
    drop.add_argument("--wait", action="store_true", help="wait until the mirror no longer lists it")
    drop.add_argument("--timeout", type=_seconds, default=600.0, help="seconds to wait (default 600)")
    schema = verb("schema", "plan a schema change of a table and carry it out (the wizard, or --confirm)")
    schema.add_argument("table", metavar="T")
    schema.add_argument("df", metavar="DF", help="variable, temp view or table with the new schema")
    schema.add_argument("--keys", type=_names, default=None, help="the key columns from now on")
    schema.add_argument("--confirm", default=None, metavar="T", help="run it now; T: the table's name again")
    schema.add_argument("--no-wait", action="store_true", help="do not wait for the mirror to have it back")
    verb("tables", "the tables of the landing zone")

    mirror = verb("mirror", "replicate a local database into Delta tables")
    when = mirror.add_mutually_exclusive_group()
    when.add_argument("--once", action="store_true", help="one pass (the default)")
    when.add_argument("--start", action="store_true", help="run passes in the background")
    when.add_argument("--stop", action="store_true", help="stop the background mirror")
    mirror.add_argument("--interval", type=_seconds, default=None, help="seconds between passes (default 5)")
    return parser


def parse(line: str) -> argparse.Namespace:
    """Split ``line`` like a POSIX shell (IPython's own split keeps the quotes; a ``#`` comment
    ends it) and parse it."""
    try:
        tokens = shlex.split(line, comments=True, posix=True)
    except ValueError as exc:
        raise UsageError(f"{PROG}: cannot split {line!r}: {exc}; close the quote.") from None
    return build_parser().parse_args(tokens)
