"""``db.run_plan``: every planned table pushed, ``parallel`` at a time, each on a thread of its own.

Each table runs alone (``run_table``): its error is its own result, never another table's, and
each push is whole (lock, journal, publish) so no table's push undoes another's. Each push's Spark
jobs are in a job group of their own (``run_push`` sets it on its thread when it reports
progress, which it always does here), so its progress counts only its jobs. An interrupt
(KeyboardInterrupt, the notebook's stop button) starts no more tables and cancels the Spark jobs
of those still staging, which then publish nothing; a push already decided finishes. The next
run finishes what was decided (every push settles its table first) and does the rest.
"""

from __future__ import annotations

import concurrent.futures as cf
import time
import uuid
from dataclasses import replace

from openmirror_nb._core.errors import PushCancelledError
from openmirror_nb._core.progress import always, check_parallel
from openmirror_nb._core.sources.plan import PlannedTable, SourcePlan
from openmirror_nb._core.sources.plan_goals import store_goals
from openmirror_nb._core.sources.run_result import PlanRun, PlanTableRun
from openmirror_nb._core.sources.run_table import run_table
from openmirror_nb._core.sources.runner import Runner

POLL_SECONDS = 0.2  # how often the waiting thread wakes, so an interrupt reaches it


def run_plan(runner: Runner, plan: SourcePlan, *, parallel: int) -> PlanRun:
    """Run every table of ``plan`` (see ``Running.run_plan``)."""
    check_parallel(parallel)
    if not runner.dry_run:  # before the tables run, so db.status judges them by the plan's goals
        store_goals(runner.storage, plan.tables)
    started = time.monotonic()
    tag = f"openmirror-plan-{uuid.uuid4().hex[:12]}"
    runner = replace(runner, progress=always(runner.progress))
    done: dict[int, PlanTableRun] = {}
    pool = cf.ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="openmirror-plan")
    futures = {pool.submit(_tagged, runner, t, tag): i for i, t in enumerate(plan.tables)}
    try:
        _wait(futures, done)
    except KeyboardInterrupt:
        _cancel(pool, futures, tag)
        _wait(futures, done, cancelled=True)
        run = _result(done, runner, started)
        raise PushCancelledError(
            f"run_plan was cancelled: {len(done):,} of {len(plan.tables):,} tables ran ({run.summary()}); "
            "tables still staging published nothing, and pushes already decided finished. Run the plan "
            "again to finish it.",
            decided=False,
        ) from None
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return _result(done, runner, started)


def _tagged(runner: Runner, planned: PlannedTable, tag: str) -> PlanTableRun:
    """``run_table`` with this thread's Spark jobs tagged ``tag``, so an interrupt can cancel them."""
    from openmirror_nb._core.runtime import get_spark

    context = get_spark().sparkContext
    context.addJobTag(tag)
    try:
        return run_table(runner, planned)
    finally:
        context.removeJobTag(tag)


def _wait(
    futures: dict[cf.Future[PlanTableRun], int], done: dict[int, PlanTableRun], *, cancelled: bool = False
) -> None:
    pending = {f for f in futures if not f.cancelled()}
    while pending:
        finished, pending = cf.wait(pending, timeout=POLL_SECONDS)
        for future in finished:
            if not future.cancelled():
                done[futures[future]] = future.result()
        if cancelled:
            pending = {f for f in pending if not f.cancelled()}


def _cancel(pool: cf.ThreadPoolExecutor, futures: dict[cf.Future[PlanTableRun], int], tag: str) -> None:
    from openmirror_nb._core.runtime import get_spark

    for future in futures:
        future.cancel()  # those not started yet
    pool.shutdown(wait=False, cancel_futures=True)
    get_spark().sparkContext.cancelJobsWithTag(tag)


def _result(done: dict[int, PlanTableRun], runner: Runner, started: float) -> PlanRun:
    tables = [done[i] for i in sorted(done)]
    return PlanRun(tables, dry_run=runner.dry_run, seconds=time.monotonic() - started)
