"""``LocalMirror``: the single-process replicator of a local mirrored database.

One pass discovers table folders, syncs them (``folder_pass``: drops the tables whose folders are
gone, rebuilds those whose folders were recreated, applies pending files per table; a failing
table never stops the others) and writes ``Files/Monitoring``. ``run`` repeats passes until
stopped; ``start`` does it on a daemon thread for notebooks. Only one pass runs at a time per
database (a thread lock plus an ``flock`` on ``.mirror/lock``, so two processes cannot interleave
either).
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from openmirror_nb._core.errors import ConfigError, MirrorError, user_line
from openmirror_nb._core.landing_zone.names import DEFAULT_SCHEMA
from openmirror_nb._core.mirror.discovery import discover_folders
from openmirror_nb._core.mirror.faults import INTERNAL
from openmirror_nb._core.mirror.folder_pass import run_pass
from openmirror_nb._core.mirror.interpreter_exit import exiting
from openmirror_nb._core.mirror.monitoring import write_monitoring
from openmirror_nb._core.mirror.results import MirrorRun
from openmirror_nb._core.mirror.state import MirrorState
from openmirror_nb._core.mirror.table_sync import SyncLimits
from openmirror_nb._core.target import LocalTarget, parse_target

log = logging.getLogger(__name__)
STATE_FOLDER = ".mirror"


class LocalMirror:
    """Replicate a local mirrored database's landing zone into Delta tables under ``Tables/``.

    Args:
        path: The mirrored database folder (holding ``Files/LandingZone``), a ``file://`` URL
            or that database's ``Files/LandingZone``; ``None`` is ``./openmirror-db``.
        limits: How many rows and bytes one Delta commit may take in.

    Raises:
        MirrorError: ``path`` is a OneLake URL (the service mirrors those itself).

    Example:
        >>> mirror = LocalMirror("openmirror-db")
        >>> run = mirror.run_once()
        >>> run["sales.orders"].status
        'Replicating'
    """

    def __init__(
        self, path: str | os.PathLike[str] | None = None, *, limits: SyncLimits | None = None
    ) -> None:
        target = parse_target(path)
        if not isinstance(target, LocalTarget):
            raise MirrorError(
                f"LocalMirror replicates local mirrored databases only; {target} is mirrored by "
                "Fabric itself."
            )
        self._target = target
        self._limits = limits or SyncLimits()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_run: MirrorRun | None = None
        self._last_error: BaseException | None = None

    @property
    def root(self) -> Path:
        """The local mirrored database's folder (``Files/``, ``Tables/`` inside)."""
        return self._target.root

    @property
    def last_run(self) -> MirrorRun | None:
        """The result of the latest completed pass (also of passes run by ``start``)."""
        return self._last_run

    @property
    def last_error(self) -> BaseException | None:
        """The error of the latest pass that failed as a whole, if the latest pass failed."""
        return self._last_error

    @property
    def is_running(self) -> bool:
        """Whether the background thread ``start`` began is still replicating."""
        return self._thread is not None and self._thread.is_alive()

    def table_path(self, table: str) -> Path:
        """The Delta folder of ``"schema.table"`` (or ``"table"`` in ``dbo``)."""
        schema, _, name = table.partition(".")
        return (
            self._target.tables / DEFAULT_SCHEMA / schema if not name else self._target.tables / schema / name
        )

    def run_once(self) -> MirrorRun:
        """Run one pass over every table folder and return what it applied, per table.

        Alone, the pass leaves ``replicator.json`` saying ``Stopped`` (nothing replicates after
        it); inside ``run``/``start`` (or while ``start``'s thread runs) it says ``Running``.

        Raises:
            MirrorError: the database has no ``Files/LandingZone`` folder.
        """
        return self._pass(looping=self.is_running)

    def _pass(self, *, looping: bool) -> MirrorRun:
        landing_zone = self._target.landing_zone
        if not landing_zone.is_dir():
            raise MirrorError(
                f"No landing zone at {landing_zone}; pass the mirrored database folder (the one "
                "holding Files/LandingZone), or push a table to create it."
            )
        with self._lock, self._file_lock():
            started, clock = datetime.now(UTC), time.perf_counter()
            state = MirrorState(self.root / STATE_FOLDER / "state.json")
            runs = run_pass(
                state, discover_folders(landing_zone), tables=self._target.tables, limits=self._limits
            )
            state.save()
            write_monitoring(
                self._target.monitoring,
                status="Running" if looping else "Stopped",
                tables=state.tables.values(),
            )
            result = MirrorRun(tuple(runs), started, time.perf_counter() - clock)
        self._last_run, self._last_error = result, None
        return result

    def run(
        self,
        *,
        interval: float = 5.0,
        stop: threading.Event | None = None,
        max_iterations: int | None = None,
        on_pass: Callable[[MirrorRun], None] | None = None,
        on_error: Callable[[Exception], None] | None = None,
    ) -> None:
        """Run passes every ``interval`` seconds until ``stop`` is set or ``max_iterations`` ran.

        A pass that fails as a whole (say, the landing zone is missing) is logged and kept in
        ``last_error``; the loop goes on. A pass cut short by the interpreter's exit ends the
        loop without a word (``mirror.interpreter_exit``). On exit ``replicator.json`` says
        ``Stopped`` and every table that is not ``Failed`` is ``Stopped`` until the next pass.

        Args:
            interval: Seconds between the end of one pass and the start of the next.
            stop: Set it to stop the loop; by default ``stop()`` of this mirror does.
            max_iterations: Stop after this many passes.
            on_pass: Called with each completed pass (on the loop's thread).
            on_error: Called with the error of each pass that failed as a whole.
        """
        if interval < 0:
            raise ConfigError(f"interval must be 0 or more seconds, not {interval!r}.")
        if stop is None:
            self._stop.clear()
        event = stop or self._stop
        passes = 0
        try:
            while not event.is_set():
                try:
                    result = self._pass(looping=True)
                except Exception as exc:
                    if exiting():  # dropped, not failed: see mirror.interpreter_exit
                        return
                    self._last_error = exc
                    log.exception("Mirror pass over %s failed", self.root)
                    self._write_replicator_error(exc)
                    if on_error is not None:
                        on_error(exc)
                else:
                    if on_pass is not None:
                        on_pass(result)
                passes += 1
                if max_iterations is not None and passes >= max_iterations:
                    break
                event.wait(interval)
        finally:
            try:
                self._mark_stopped()
            except Exception:
                if not exiting():
                    log.exception("Marking the mirror of %s stopped failed", self.root)

    def start(
        self,
        *,
        interval: float = 5.0,
        on_pass: Callable[[MirrorRun], None] | None = None,
        on_error: Callable[[Exception], None] | None = None,
    ) -> threading.Thread:
        """Run ``run(...)`` on a daemon thread (for notebooks); ``stop()`` ends it.

        ``on_pass`` and ``on_error`` are called on that thread after each pass (a monitoring
        pane refreshes from them); an exception they raise is logged and the loop goes on.
        """
        if self.is_running:
            raise MirrorError(f"The mirror of {self.root} is already running; call stop() first.")
        self._stop.clear()
        thread = threading.Thread(
            target=self.run,
            kwargs={
                "interval": interval,
                "stop": self._stop,
                "on_pass": _guarded(on_pass),
                "on_error": _guarded(on_error),
            },
            name=f"openmirror-mirror:{self.root.name}",
            daemon=True,
        )
        self._thread = thread
        thread.start()
        return thread

    def stop(self, *, timeout: float | None = None) -> None:
        """Ask the loop to stop after the current pass and wait for its thread to end."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def __repr__(self) -> str:
        return f"LocalMirror({str(self.root)!r}{', running' if self.is_running else ''})"

    @contextmanager
    def _file_lock(self) -> Iterator[None]:
        folder = self.root / STATE_FOLDER
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / "lock", "a+b") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def _mark_stopped(self) -> None:
        if not self.root.is_dir():
            return
        with self._lock, self._file_lock():
            state = MirrorState(self.root / STATE_FOLDER / "state.json")
            for table in state.tables.values():
                if table.status != "Failed":
                    table.status = "Stopped"
            if state.tables:
                state.save()
            write_monitoring(self._target.monitoring, status="Stopped", tables=state.tables.values())

    def _write_replicator_error(self, exc: Exception) -> None:
        if not self.root.is_dir():
            return
        try:
            self._write_error_status(exc)
        except Exception:
            log.exception("Writing %s/replicator.json failed", self._target.monitoring)

    def _write_error_status(self, exc: Exception) -> None:
        with self._lock, self._file_lock():
            state = MirrorState(self.root / STATE_FOLDER / "state.json")
            write_monitoring(
                self._target.monitoring,
                status="Running",
                tables=state.tables.values(),
                error_code=INTERNAL,
                error_message=user_line(exc),
            )


def _guarded(callback: Callable[[Any], None] | None) -> Callable[[Any], None] | None:
    """``callback``, with what it raises logged instead of ending the mirror's loop."""
    if callback is None:
        return None
    hook = callback

    def call(value: Any) -> None:
        try:
            hook(value)
        except Exception:
            log.exception("A mirror callback failed")

    return call
