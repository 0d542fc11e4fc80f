"""The ``openmirror mirror [--once | --interval SECONDS] [--db PATH]`` verb, ready for the CLI to call."""

from __future__ import annotations

import os
from collections.abc import Callable

from openmirror_nb._core.errors import ConfigError
from openmirror_nb._core.mirror.replicator import LocalMirror
from openmirror_nb._core.mirror.results import MirrorRun


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
            on_error=lambda exc: echo(f"Mirror pass failed: {exc}"),
        )
    except KeyboardInterrupt:
        echo("Stopped.")
    return 0
