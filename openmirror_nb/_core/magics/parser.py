"""The ``%openmirror`` grammar: argparse subparsers whose errors are IPython ``UsageError``s.

jupysql's ``CmdParser`` pattern: ``error()`` raises instead of exiting the kernel, and the message
names the verb, the problem and the usage line.
"""

from __future__ import annotations

import argparse
import shlex
from typing import NoReturn

from IPython.core.error import UsageError

from openmirror_nb._core.grammar import PROGS, add_verbs

PROG = PROGS["magic"]


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


def build_parser() -> MagicParser:
    """The parser of every verb the magic has (``grammar.VERBS``); each subparser's ``prog`` is
    ``%openmirror <verb>``."""
    parser = MagicParser(prog=PROG, description="Mirror DataFrames into an open-mirrored database.")
    add_verbs(parser, "magic")
    return parser


def parse(line: str) -> argparse.Namespace:
    """Split ``line`` like a POSIX shell (IPython's own split keeps the quotes; a ``#`` comment
    ends it) and parse it."""
    try:
        tokens = shlex.split(line, comments=True, posix=True)
    except ValueError as exc:
        raise UsageError(f"{PROG}: cannot split {line!r}: {exc}; close the quote.") from None
    return build_parser().parse_args(tokens)
