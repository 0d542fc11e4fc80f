"""What a push reports while it runs (``db.push(..., progress=...)``), and two displays of it.

A push calls its ``progress`` callback with typed events, in this order: ``Validating``, maybe
``WaitingForLock`` (another writer holds the table), ``Staging`` (repeatedly, with Spark's own
stage and task counts), ``Publishing`` (file i of n), ``Committing``, then ``Finished``,
``PushFailed`` or ``Cancelled``. Events come from the pushing thread, and ``Staging`` also from a
polling thread, so a callback must be quick and thread-safe (widgets: assign values only).

Left at its default, a push shows a progress bar in a Jupyter kernel (``WidgetProgress``: an
``IntProgress`` and an ``HTML`` label updated in place), one line per phase in a terminal IPython
(``TextProgress``), and nothing in scripts. ``progress=False`` shows nothing.
"""

from __future__ import annotations

import html
import logging
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TextIO

from openmirror_nb._core.errors import ConfigError
from openmirror_nb._core.model import PushResult

if TYPE_CHECKING:
    import ipywidgets

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ProgressEvent:
    """Something a push did; ``elapsed`` is seconds since it started, ``jobs`` how many Spark jobs
    it has started so far (its own job group's, by Spark's status tracker): the difference between
    two events is what ran between them."""

    table: str
    elapsed: float
    jobs: int = field(default=0, kw_only=True)

    @property
    def text(self) -> str:
        """One line for a progress bar's label or a log: what the push is doing now."""
        return "working"


@dataclass(frozen=True)
class Validating(ProgressEvent):
    @property
    def text(self) -> str:
        return "validating names, keys and types"


@dataclass(frozen=True)
class WaitingForLock(ProgressEvent):
    """Another writer holds the table; the push waits for it (up to its lock timeout)."""

    holder: str | None = None
    since: float | None = None

    @property
    def text(self) -> str:
        return f"waiting for the table lock, held by {self.holder or 'another writer'}"


@dataclass(frozen=True)
class Staging(ProgressEvent):
    """Spark is computing and writing the files: which ``step`` (writing the data files, the key
    state, checking the keys, ...) and the counts of Spark's status tracker for the push's jobs."""

    step: str = ""
    stages_done: int = 0
    stages: int = 0
    tasks_done: int = 0
    tasks: int = 0

    @property
    def text(self) -> str:
        head = f"staging on Spark: {self.step}" if self.step else "staging on Spark"
        if not self.stages:
            return head
        return (
            f"{head} (stage {min(self.stages_done + 1, self.stages)} of {self.stages}, "
            f"{self.tasks_done:,} of {self.tasks:,} tasks)"
        )


@dataclass(frozen=True)
class Publishing(ProgressEvent):
    """File ``file`` of ``files`` got its sequence number (the push is decided)."""

    file: int = 0
    files: int = 0
    name: str = ""

    @property
    def text(self) -> str:
        return f"publishing file {self.file:,} of {self.files:,} ({self.name})"


@dataclass(frozen=True)
class Committing(ProgressEvent):
    @property
    def text(self) -> str:
        return "committing the table's state"


@dataclass(frozen=True)
class Finished(ProgressEvent):
    result: PushResult | None = None

    @property
    def text(self) -> str:
        return f"done: {self.result!r}" if self.result else "done"


@dataclass(frozen=True)
class PushFailed(ProgressEvent):
    error: str = ""

    @property
    def text(self) -> str:
        return f"failed: {self.error}"


@dataclass(frozen=True)
class Cancelled(ProgressEvent):
    """Interrupted: before the push was decided (nothing published) or after (it finished)."""

    decided: bool = False

    @property
    def text(self) -> str:
        if self.decided:
            return "cancel came after the push was decided: it finished publishing"
        return "cancelled before anything was published: the landing zone is unchanged"


ProgressCallback = Callable[[ProgressEvent], None]
Progress = ProgressCallback | None | Literal[False]
FINAL = (Finished, PushFailed, Cancelled)


def emit(callback: ProgressCallback | None, event: ProgressEvent) -> None:
    """Call ``callback``; what it raises is logged, never the push's problem."""
    if callback is None:
        return
    try:
        callback(event)
    except Exception:
        log.exception("A progress callback failed on %s", type(event).__name__)


def resolve(progress: Progress) -> ProgressCallback | None:
    """The callback a push uses: the given one, none (``False``), or the default display."""
    if progress is False:
        return None
    if progress is not None:
        return progress
    return default_progress()


def check_parallel(parallel: object) -> None:
    """Refuse a ``parallel=`` (pushes run beside each other: ``run_plan``, a routed sink) that is
    not a whole number of at least 1."""
    if isinstance(parallel, bool) or not isinstance(parallel, int) or parallel < 1:
        raise ConfigError(f"parallel={parallel!r} must be a whole number of tables at a time, at least 1.")


def always(progress: ProgressCallback | None) -> ProgressCallback:
    """A callback for a push run beside others on a thread of its own: with one, the push runs
    its Spark jobs in a job group of its own (``PushJobs``), so its count is its jobs alone."""
    return progress if progress is not None else _ignore


def _ignore(event: ProgressEvent) -> None:
    return None


def default_progress() -> ProgressCallback | None:
    """A bar in a Jupyter kernel, text lines in a terminal IPython, nothing in scripts."""
    shell = _shell()
    if shell is None:
        return None
    if getattr(shell, "kernel", None) is not None:
        try:
            bar = WidgetProgress()
        except ImportError:  # no ipywidgets: text lines still say what happens
            return TextProgress()
        bar.show()
        return bar
    return TextProgress()


def _shell() -> Any:
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return None  # IPython was never imported: a script
    get = getattr(ipython, "get_ipython", None)
    return get() if get else None


class TextProgress:
    """A push's progress as text: one line per phase and staging step on ``stream`` (stderr by
    default), not one per Spark task. What a push shows in a terminal IPython; pass one as
    ``progress=`` anywhere else (a job's log). Repeats are dropped per table, so one instance
    serves tables pushed beside each other (``run_plan(parallel=...)``): every table's lines show."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream
        # per table: parallel pushes interleave their events, and one table's phase is no
        # repeat of another's
        self._last: dict[str, tuple[type[ProgressEvent], str]] = {}
        self._guard = threading.Lock()

    def __call__(self, event: ProgressEvent) -> None:
        key = (type(event), getattr(event, "step", ""))
        if isinstance(event, Publishing) and 1 < event.file < event.files:
            return  # the first and the last file say enough
        with self._guard:  # events come from several pushing threads
            if self._last.get(event.table) == key and not isinstance(event, Publishing):
                return
            self._last[event.table] = key
            stream = self._stream or sys.stderr
            stream.write(f"[{event.elapsed:6.1f} s] {event.table}: {event.text}\n")
            stream.flush()


_STEPS = {Validating: 2, WaitingForLock: 4, Staging: 5, Publishing: 80, Committing: 97}


class WidgetProgress:
    """A push's progress as an ``IntProgress`` (0-100) and an ``HTML`` label in one ``VBox``
    (``widget``), updated in place: what a push shows by default in a notebook. Staging moves the
    bar through 5-80 by Spark's tasks, publishing through 80-97. Pass one as ``progress=`` to
    place the bar yourself (the panels embed ``widget``).

    Example:
        >>> bar = om.WidgetProgress()
        >>> display(bar.widget)
        >>> db.push(df, table="sales.orders", progress=bar)
    """

    def __init__(self) -> None:
        import ipywidgets as w

        self.bar = w.IntProgress(value=0, min=0, max=100, bar_style="info", layout=w.Layout(width="420px"))
        self.label = w.HTML(value="")
        self.widget: ipywidgets.VBox = w.VBox([w.HBox([self.bar, self.label])])
        self.widget.add_class("openmirror-progress")
        self.events: list[ProgressEvent] = []

    def show(self) -> None:
        """Display the bar in the running notebook (a push's default bar shows itself)."""
        from IPython.display import display

        display(self.widget)  # type: ignore[no-untyped-call]

    def __call__(self, event: ProgressEvent) -> None:
        self.events.append(event)
        self.bar.value = max(self.bar.value, _position(event))
        if isinstance(event, Finished):
            self.bar.bar_style = "success"
        elif isinstance(event, PushFailed | Cancelled):
            self.bar.bar_style = "warning" if isinstance(event, Cancelled) and event.decided else "danger"
        colour = "#c62828" if isinstance(event, PushFailed) else "inherit"
        # a button cannot be clicked while the cell runs: interrupting the kernel is the cancel
        hint = " · interrupt the kernel (■) to cancel" if isinstance(event, Validating | Staging) else ""
        self.label.value = (
            f"<span style='color:{colour}'>{html.escape(event.table)}: {html.escape(event.text)} "
            f"<small>({event.elapsed:.1f} s{hint})</small></span>"
        )


def _position(event: ProgressEvent) -> int:
    if isinstance(event, Staging) and event.tasks:
        share = event.tasks_done / event.tasks
        return 5 + int(75 * (event.stages_done + share) / max(event.stages, 1))
    if isinstance(event, Publishing) and event.files:
        return 80 + int(17 * event.file / event.files)
    if isinstance(event, FINAL):
        return 100 if isinstance(event, Finished) or getattr(event, "decided", False) else 0
    return _STEPS.get(type(event), 0)
