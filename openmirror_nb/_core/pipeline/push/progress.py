"""What a running push reports and how it stops: Spark's stage and task counts while it stages,
and a cancel (KeyboardInterrupt, the notebook's stop button) that lands only where it is safe.

Before a push is decided (its journal written) a cancel stops it and what it staged is removed:
the landing zone is unchanged. From the decision on, the push must finish or leave a journal for
the next push to finish; so from just before the decision to the end of publishing, an interrupt
is held back until the files are out, and then reported (``PushCancelledError``).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.progress import ProgressCallback, ProgressEvent, Staging, emit

if TYPE_CHECKING:
    from pyspark import SparkContext

POLL_SECONDS = 0.5
_GROUP = "spark.jobGroup.id"


class PushJobs:
    """The push's own Spark jobs, when someone listens to its progress: ``tagged`` puts them in a
    job group of their own, ``count`` says how many have started (every event carries it).

    The job group is this thread's local property (PySpark pins Python threads to JVM threads):
    it is set for the push and put back as it was after, so the user's own jobs are neither
    counted nor re-tagged. Without a listener nothing is set and ``count`` is 0.
    """

    def __init__(self, sc: SparkContext | None, group: str) -> None:
        self.sc, self.group = sc, group

    def count(self) -> int:
        if self.sc is None:
            return 0
        try:
            return len(self.sc.statusTracker().getJobIdsForGroup(self.group))
        except Exception:  # the context is stopping: a progress display is no reason to fail
            return 0

    @contextmanager
    def tagged(self) -> Iterator[None]:
        if self.sc is None:
            yield
            return
        before = self.sc.getLocalProperty(_GROUP)
        self.sc.setLocalProperty(_GROUP, self.group)
        try:
            yield
        finally:
            self.sc.setLocalProperty(_GROUP, before)  # type: ignore[arg-type]  # None removes it


class StagingSteps:
    """The step a push is staging (``on_step`` is ``StageContext.on_step``), shared with the
    thread that reads Spark's counts so its events name the step too."""

    def __init__(self, say: Callable[..., ProgressEvent], progress: ProgressCallback | None) -> None:
        self.step = ""
        self.say, self._progress = say, progress

    def on_step(self, label: str) -> None:
        self.step = label
        emit(self._progress, self.say(Staging, step=label))


@contextmanager
def spark_stages(
    jobs: PushJobs, *, say: Callable[..., ProgressEvent], progress: ProgressCallback | None
) -> Iterator[StagingSteps]:
    """Report the stages of the push's Spark jobs (``jobs``, tagged by the caller) until the
    block ends, from a polling thread."""
    steps = StagingSteps(say, progress)
    if progress is None or jobs.sc is None:
        yield steps
        return
    stop = threading.Event()
    poller = threading.Thread(
        target=_poll,
        args=(jobs.sc, jobs.group, steps, progress, stop),
        name="openmirror-push-progress",
        daemon=True,
    )
    poller.start()
    try:
        yield steps
    finally:
        stop.set()
        poller.join(30)  # its last reading: the counts of the finished stages


def _poll(
    sc: SparkContext, group: str, steps: StagingSteps, progress: ProgressCallback, stop: threading.Event
) -> None:
    tracker = sc.statusTracker()
    seen: dict[int, tuple[int, int]] = {}  # stage id -> (tasks, tasks completed)
    last: tuple[int, int, int, int] | None = None
    while True:
        # one last reading after the block ends, so a stage shorter than a poll is still counted
        finished = stop.wait(POLL_SECONDS)
        try:
            active = set()
            for job in tracker.getJobIdsForGroup(group):
                info = tracker.getJobInfo(job)
                for stage_id in info.stageIds if info else ():
                    stage = tracker.getStageInfo(stage_id)
                    if stage is None:
                        continue
                    if stage.numActiveTasks or stage.numCompletedTasks < stage.numTasks:
                        active.add(stage_id)
                    seen[stage_id] = (stage.numTasks, stage.numCompletedTasks)
        except Exception:  # the context is stopping, or py4j is busy: skip this reading
            if finished:
                return
            continue
        # a stage a job skipped (its output reused) never runs: count only stages that did
        ran = {s: v for s, v in seen.items() if s in active or v[1]}
        counts = (
            len([s for s in ran if s not in active]),
            len(ran),
            sum(done for _, done in ran.values()),
            sum(tasks for tasks, _ in ran.values()),
        )
        if counts != last and counts[1]:
            last = counts
            done, stages, tasks_done, tasks = counts
            event = steps.say(
                Staging, step=steps.step, stages_done=done, stages=stages, tasks_done=tasks_done, tasks=tasks
            )
            emit(progress, event)
        if finished:
            return


class HeldInterrupt:
    """Whether an interrupt arrived while it was held back."""

    def __init__(self) -> None:
        self.arrived = False


@contextmanager
def hold_interrupts() -> Iterator[HeldInterrupt]:
    """Hold SIGINT back for the block (main thread only; elsewhere signals do not arrive anyway)."""
    held = HeldInterrupt()
    if threading.current_thread() is not threading.main_thread():
        yield held
        return

    def note(signum: int, frame: FrameType | None) -> None:
        held.arrived = True

    previous: Any = signal.signal(signal.SIGINT, note)
    try:
        yield held
    finally:
        signal.signal(signal.SIGINT, previous)
