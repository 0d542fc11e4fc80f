"""Which push kinds the crash matrix kills in this run.

By default every kind, at every kill point: CI runs the whole matrix on the main line, as it fits
CI's budget today (one cold Spark driver per point). Should later suites crowd it out,
``OPENMIRROR_CRASH_KINDS=rotate`` kills one kind per run, chosen by the commit under test, so the
kinds take turns from one commit to the next; ``.ci/run`` would set it, and ``scripts/soak`` keeps
killing every kind. A list (``initial,diff``) chooses kinds. The Runtime 1.3 line kills each kind at
a few points of its own (``test_crash_matrix.RUNTIME13``). The choice is printed in the run's header.
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
    if asked in ("", "all"):
        return KINDS, "every kind, at every point"
    if asked == "rotate":
        head = commit()
        if head is None:  # not a git checkout: nothing to rotate by
            return KINDS, f"every kind ({ENV}=rotate, but no git commit to rotate by)"
        kind = KINDS[int(head[:12], 16) % len(KINDS)]
        return (kind,), f"{kind}, by rotation on commit {head[:12]} ({ENV}=rotate)"
    chosen = tuple(k.strip() for k in asked.split(","))
    unknown = [k for k in chosen if k not in KINDS]
    if unknown:
        raise ValueError(f"{ENV}={asked!r}: {unknown} are not kinds; use all, rotate or some of {KINDS}")
    return chosen, f"{', '.join(chosen)} ({ENV})"


def covers(kind: str) -> bool:
    """Whether this run kills ``kind`` (a feed in one task counts as ``changes``)."""
    return ("changes" if kind == "changes_in_one_task" else kind) in kinds()[0]
