"""The verbs of ``%openmirror`` and of the ``openmirror`` command: one table both grammars are
built from.

A verb has one shape wherever both skins have it, the magic's (``drop T``, ``status [T]``,
``push DF --table T``); the command line adds the database as ``--db PATH``, where the magic has
``connect``. Choices come from the API's ``Literal`` types, so a new convention or compression
reaches both grammars at once; the flags of a change feed and a push's files, and the API
keywords they make, are ``push_flags``'. What each verb does lives with its skin
(``magics.commands``, ``cli``); this module holds only names, help and arguments, and imports no
IPython.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from openmirror_nb import PushMode
from openmirror_nb._core.push_flags import FEED_FLAGS, FEED_USAGE, FILE_FLAGS, names

Skin = Literal["magic", "cli"]
BOTH: frozenset[Skin] = frozenset(("magic", "cli"))
MAGIC: frozenset[Skin] = frozenset(("magic",))
CLI: frozenset[Skin] = frozenset(("cli",))
PROGS: dict[Skin, str] = {"magic": "%openmirror", "cli": "openmirror"}
DEFAULT_DB = "./openmirror-db"


def seconds(value: str) -> float:
    """A number of seconds, 0 or more."""
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not number >= 0:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds (0 or more)")
    return number


@dataclass(frozen=True)
class Arg:
    """One argument of a verb: its flags, ``argparse`` keywords, and the skins that have it.

    ``help`` may differ by skin (a DataFrame is a notebook variable in the magic, a Parquet file
    on the command line); ``group`` names a mutually exclusive group within the verb.
    """

    flags: tuple[str, ...]
    options: Mapping[str, Any]
    skins: frozenset[Skin] = BOTH
    help: str | Mapping[Skin, str] | None = None
    group: str | None = None

    def help_for(self, skin: Skin) -> str | None:
        return self.help.get(skin) if isinstance(self.help, Mapping) else self.help


def arg(
    *flags: str,
    skins: frozenset[Skin] = BOTH,
    help: str | Mapping[Skin, str] | None = None,
    group: str | None = None,
    **options: Any,
) -> Arg:
    return Arg(flags, options, skins, help, group)


@dataclass(frozen=True)
class Verb:
    """A verb: its name, one line of help, its usage after the name, and its arguments.

    ``database``: the verb works on a database, so the command line takes ``--db PATH``.
    """

    name: str
    help: str
    usage: str
    args: tuple[Arg, ...] = ()
    skins: frozenset[Skin] = BOTH
    database: bool = True
    cli_usage: str | None = field(default=None)

    def usage_for(self, skin: Skin) -> str:
        if skin == "cli" and self.cli_usage is not None:
            return self.cli_usage
        db = " [--db PATH]" if skin == "cli" and self.database else ""
        return f"{self.usage}{db}".strip()


TABLE = arg("table", metavar="T", help="name or schema.name")
KEYS = arg("--keys", type=names, default=None, metavar="K,...", help="key columns, comma-separated")
# A change feed's options (one om.FeedOptions), shared by push and stream; a push's file options
FEED = tuple(arg(*flags, **options) for flags, options in FEED_FLAGS)
FILES = tuple(arg(*flags, **options) for flags, options in FILE_FLAGS)
DF_HELP: dict[Skin, str] = {"magic": "variable, temp view or table", "cli": "Parquet file or folder to read"}
PLAN_HELP: dict[Skin, str] = {
    "magic": "variable holding a SourcePlan, or its YAML file",
    "cli": "the plan's YAML file (plan.save)",
}
ONCE_HELP: dict[Skin, str] = {
    "magic": "one pass (the default)",
    "cli": "one pass, then exit (1 if a table failed)",
}

VERBS: tuple[Verb, ...] = (
    Verb(
        "connect",
        f"open a mirrored database; later verbs use it (default {DEFAULT_DB})",
        "[TARGET]",
        (arg("target", nargs="?", default=None, help="folder, file:// or OneLake URL"),),
        skins=MAGIC,
    ),
    Verb(
        "push",
        "push a DataFrame to a table: a snapshot (diffed) or a change feed",
        f"DF --table T [--keys K,...] [--mode changes] {FEED_USAGE} [--quiet]",
        (
            arg("df", nargs="?", default=None, metavar="DF", help=DF_HELP),
            arg("--table", required=True, metavar="T", help="name or schema.name"),
            KEYS,
            arg("--mode", choices=get_args(PushMode), default="snapshot"),
            *FEED,
            *FILES,
            arg("--quiet", action="store_true", skins=MAGIC, help="no progress display"),
        ),
        cli_usage=f"DF --table T [--keys K,...] [--mode changes] {FEED_USAGE} [--format F] "
        "[--compression Z] [--rows-per-file N] [--db PATH]",
    ),
    Verb(
        "status",
        "what is pending, processed, blocked or failed, per table",
        "[T] [--reconcile]",
        (
            arg("table", nargs="?", default=None, metavar="T", help="one table (default: all)"),
            arg("--reconcile", action="store_true", help="also compare row counts (needs Spark)"),
            arg("--json", action="store_true", skins=CLI, help="print the report as JSON"),
        ),
        cli_usage="[T] [--reconcile] [--json] [--db PATH]",
    ),
    Verb("monitor", "the live monitoring pane", "", skins=MAGIC),
    Verb("onboard", "the onboarding panel: pick DataFrames, declare keys, push", "", skins=MAGIC),
    Verb("describe", "keys, schema, format and push state of a table", "T", (TABLE,)),
    Verb(
        "drop",
        "delete a table: its folder and everything kept about it",
        "T [--wait] [--timeout S]",
        (
            TABLE,
            arg("--wait", action="store_true", help="wait until the mirror no longer lists it"),
            arg("--timeout", type=seconds, default=600.0, metavar="S", help="seconds to wait (default 600)"),
        ),
    ),
    Verb(
        "schema",
        "plan a schema change of a table and carry it out (the wizard, or --confirm)",
        "T DF [--keys K,...] [--confirm T] [--no-wait]",
        (
            TABLE,
            arg("df", metavar="DF", help="variable, temp view or table with the new schema"),
            arg("--keys", type=names, default=None, metavar="K,...", help="the key columns from now on"),
            arg("--confirm", default=None, metavar="T", help="run it now; T: the table's name again"),
            arg("--no-wait", action="store_true", help="do not wait for the mirror to have it back"),
        ),
        skins=MAGIC,
    ),
    Verb(
        "stream",
        "mirror a streaming DataFrame (a change feed); list or stop the streams started here",
        f"DF --table T --checkpoint PATH [--keys K,...] {FEED_USAGE} [--trigger W] | --list | --stop [ID]",
        (
            arg("df", nargs="?", default=None, metavar="DF", help="a streaming DataFrame variable"),
            arg("--table", default=None, metavar="T", help="name or schema.name"),
            arg("--checkpoint", default=None, metavar="PATH", help="the query's checkpoint folder"),
            KEYS,
            *FEED,
            arg(
                "--trigger",
                default="available_now",
                metavar="W",
                help="available_now (the default), once, or an interval such as '10 seconds'",
            ),
            arg("--list", action="store_true", group="what", help="the streams started here"),
            arg(
                "--stop",
                nargs="?",
                const="all",
                default=None,
                metavar="ID",
                group="what",
                help="stop one or all",
            ),
        ),
        skins=MAGIC,
    ),
    Verb(
        "kafka",
        "mirror Kafka topics or Event Hubs, each topic into its table (JSON messages)",
        "--bootstrap HOST:PORT | --event-hubs NS (--connection-string-env V | --connection-string-secret "
        "URL) --topic T ... --schema T=DDL ... [--keys T=A,B ...] [--map TOPIC=T ...] --checkpoint PATH "
        f"{FEED_USAGE} "
        "[--trigger W] [--starting-offsets S] [--max-offsets N] [--option K=V ...]",
        (
            arg("--bootstrap", default=None, metavar="HOST:PORT", group="source", help="Kafka brokers"),
            arg("--event-hubs", default=None, metavar="NS", group="source", help="Event Hubs namespace"),
            arg("--connection-string-env", default=None, metavar="V", group="secret", help="env var with it"),
            arg("--connection-string-secret", default=None, metavar="URL", group="secret", help="Key Vault"),
            arg("--topic", action="append", default=[], metavar="T", help="a topic (repeat for more)"),
            arg("--schema", action="append", default=[], metavar="T=DDL", help="a table's columns"),
            arg("--keys", action="append", default=[], metavar="T=A,B", help="a table's key columns"),
            arg("--map", action="append", default=[], metavar="TOPIC=T", help="a topic's table"),
            arg("--checkpoint", default=None, metavar="PATH", help="the query's checkpoint folder"),
            *FEED,
            arg("--trigger", default="available_now", metavar="W", help="available_now, once or an interval"),
            arg("--starting-offsets", default=None, metavar="S", help="earliest (default) or latest"),
            arg("--max-offsets", type=int, default=None, metavar="N", help="at most N messages a batch"),
            arg("--option", action="append", default=[], metavar="K=V", help="an option of Spark's source"),
        ),
    ),
    Verb(
        "discover",
        "discover a source's tables and plan each one's target, keys and strategy",
        "SRC [--target-schema S] [--save FILE]",
        (
            arg("source", metavar="SRC", help="variable holding a source (an om.Source)"),
            arg("--target-schema", default=None, metavar="S", help="the mirrored tables' schema"),
            arg("--save", default=None, metavar="FILE", help="save the plan as YAML, to edit and run"),
        ),
        skins=MAGIC,
    ),
    Verb(
        "run",
        "mirror every table of a source plan, several at a time",
        "PLAN [--parallel N] [--dry-run] [--accept-suggested] [--reread]",
        (
            arg("plan", metavar="PLAN", help=PLAN_HELP),
            arg("--parallel", type=int, default=4, metavar="N", help="tables at a time (default 4)"),
            arg("--dry-run", action="store_true", help="write nothing; say what each table would push"),
            arg("--accept-suggested", action="store_true", help="also push tables whose keys are suggested"),
            arg(
                "--reread",
                action="store_true",
                help="read every table, also those the source says are unchanged",
            ),
        ),
        cli_usage="PLAN.yaml [--parallel N] [--dry-run] [--accept-suggested] [--reread] [--db PATH]",
    ),
    Verb("tables", "the tables of the landing zone", ""),
    Verb(
        "mirror",
        "replicate a local database into Delta tables",
        "[--once | --start [--interval S] | --stop]",
        (
            arg("--once", action="store_true", group="when", help=ONCE_HELP),
            arg(
                "--start", action="store_true", group="when", skins=MAGIC, help="run passes in the background"
            ),
            arg("--stop", action="store_true", group="when", skins=MAGIC, help="stop the background mirror"),
            arg(
                "--interval",
                type=seconds,
                default=None,
                metavar="S",
                help="seconds between passes (default 5)",
            ),
        ),
        cli_usage="[--once | --interval S] [--db PATH]",
    ),
    Verb(
        "demo",
        "push a sample table and a change batch, then mirror it",
        "[PATH] [--rows N]",
        (
            arg("path", nargs="?", default=None, help=f"local mirrored database (default: {DEFAULT_DB})"),
            arg("--rows", type=int, default=10_000, metavar="N", help="rows in the sample table"),
        ),
        skins=CLI,
        database=False,
    ),
)


def add_verbs(parser: argparse.ArgumentParser, skin: Skin) -> argparse.ArgumentParser:
    """Add every verb ``skin`` has to ``parser`` as a subcommand (``args.verb`` names it); each
    subparser has the parser's class and ``prog`` ``<prog> <verb>``."""
    sub = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    for verb in VERBS:
        if skin not in verb.skins:
            continue
        usage = f"%(prog)s {verb.usage_for(skin)}".strip()
        command = sub.add_parser(verb.name, help=verb.help, description=verb.help, usage=usage)
        groups: dict[str, Any] = {}
        for a in verb.args:
            if skin not in a.skins:
                continue
            target = command
            if a.group is not None:
                target = groups.setdefault(a.group, command.add_mutually_exclusive_group())
            target.add_argument(*a.flags, help=a.help_for(skin), **a.options)
        if skin == "cli" and verb.database:
            command.add_argument(
                "--db", default=None, metavar="PATH", help=f"folder or OneLake URL (default {DEFAULT_DB})"
            )
    return parser
