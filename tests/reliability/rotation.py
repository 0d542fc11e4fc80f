"""Which push kinds the crash matrix kills in this run.

The whole matrix (every kill point of every kind, a cold Spark driver each) does not fit CI's
budget beside everything else, so a CI run kills one kind, chosen by the commit it tests: the kinds
take turns from one commit to the next, and the Runtime 1.3 line kills each kind at a few points of
its own in every run (``test_crash_matrix.RUNTIME13``). ``scripts/soak`` kills every kind
(``OPENMIRROR_CRASH_KINDS=all``); a list (``initial,diff``) chooses. The choice is printed in the
run's header.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

KINDS = ("initial", "changes", "diff")  # "changes" includes a feed staged in one task
ENV = "OPENMIRROR_CRASH_KINDS"
LINE_ENV = "OPENMIRROR_TEST_LINE"  # set by scripts/test: main, runtime13 or newest
REPO = Path(__file__).resolve().parents[2]


def commit() -> str | None:
    try:
        run = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=30, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return run.stdout.strip() or None


def kinds() -> tuple[tuple[str, ...], str]:
    """The kinds to kill, and why (for the header)."""
    asked = os.environ.get(ENV, "").strip()
    if os.environ.get(LINE_ENV) == "runtime13":  # its marked points, of every kind
        return KINDS, "every kind, at the points marked runtime13 (the Runtime 1.3 line)"
    if asked == "all":
        return KINDS, f"every kind ({ENV}=all)"
    if asked:
        chosen = tuple(k.strip() for k in asked.split(","))
        unknown = [k for k in chosen if k not in KINDS]
        if unknown:
            raise ValueError(f"{ENV}={asked!r}: {unknown} are not kinds; use all or some of {KINDS}")
        return chosen, f"{', '.join(chosen)} ({ENV})"
    head = commit()
    if head is None:  # not a git checkout: nothing to rotate by
        return KINDS, "every kind (no git commit to rotate by)"
    kind = KINDS[int(head[:12], 16) % len(KINDS)]
    return (kind,), f"{kind}, by rotation on commit {head[:12]} (scripts/soak: every kind)"


def covers(kind: str) -> bool:
    """Whether this run kills ``kind`` (a feed in one task counts as ``changes``)."""
    return ("changes" if kind == "changes_in_one_task" else kind) in kinds()[0]
