"""The flags of a change feed and of a push's files, as ``%openmirror push|stream`` and
``openmirror push`` take them, and the API keywords a parsed verb makes of them: the feed's
flags become one ``om.FeedOptions`` (``feed=``), the file flags keywords of ``db.push``.

A flag left out is left out of what it makes, so the API's defaults (``FeedOptions``'s,
``db.push``'s) stay in one place. The flags are plain ``(flags, argparse keywords)`` pairs that
``grammar`` makes arguments of its verbs; like it, this module imports no IPython.
"""

from __future__ import annotations

import argparse
from dataclasses import fields
from typing import Any, get_args

from openmirror_nb import (
    DEFAULT_ROWS_PER_FILE,
    Compression,
    Convention,
    FeedOptions,
    FileFormat,
    TableOptions,
)

Flag = tuple[tuple[str, ...], dict[str, Any]]


def names(value: str) -> list[str]:
    """``"a, b"`` -> ``["a", "b"]``: key and ordering columns are given comma-separated."""
    return [v.strip() for v in value.split(",") if v.strip()]


# One flag per FeedOptions field, its dest the field's name; None (each one's default): not given.
FEED_FLAGS: tuple[Flag, ...] = (
    (("--op-column",), {"default": None, "metavar": "C", "help": "operation column of a change feed"}),
    (("--convention",), {"choices": get_args(Convention), "default": None}),
    (
        ("--order-by",),
        {"type": names, "default": None, "metavar": "A,B", "help": "columns ordering each key's changes"},
    ),
    (
        ("--update-marker",),
        {"type": int, "choices": (1, 4), "default": None, "help": "marker of updates: 4 upsert, 1 update"},
    ),
    (("--compact",), {"action": "store_true", "default": None, "help": "keep only each key's net change"}),
    (
        ("--strict-delete",),
        {"action": "store_true", "default": None, "help": "sys_op: deletes must carry the current row"},
    ),
)
FILE_FLAGS: tuple[Flag, ...] = (
    (("--format",), {"choices": get_args(FileFormat), "default": None, "help": "file format (first push)"}),
    (("--compression",), {"choices": get_args(Compression), "default": None}),
    (
        ("--rows-per-file",),
        {"type": int, "default": None, "metavar": "N", "help": f"default {DEFAULT_ROWS_PER_FILE:,}"},
    ),
)
FEED_USAGE = (
    "[--op-column C] [--convention X] [--order-by A,B] [--update-marker M] [--compact] [--strict-delete]"
)


def feed_options(args: argparse.Namespace) -> FeedOptions:
    """The ``FeedOptions`` of a parsed ``push`` or ``stream``: the feed flags given, over the
    defaults. ``ConfigError`` for a combination no feed takes (``--strict-delete`` without
    ``--convention sys_op``)."""
    given = {f.name: getattr(args, f.name) for f in fields(FeedOptions)}
    return FeedOptions(**{name: value for name, value in given.items() if value is not None})


def push_keywords(args: argparse.Namespace) -> dict[str, Any]:
    """``db.push`` keywords from a parsed ``push`` (both skins): everything but the DataFrame and
    how progress is shown."""
    keywords: dict[str, Any] = {
        "table": args.table,
        "keys": args.keys,
        "mode": args.mode,
        "feed": feed_options(args),
    }
    if args.format is not None:
        keywords["table_options"] = TableOptions(file_format=args.format)
    if args.compression is not None:
        keywords["compression"] = args.compression
    if args.rows_per_file is not None:
        keywords["rows_per_file"] = args.rows_per_file
    return keywords
