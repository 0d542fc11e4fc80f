"""``SourcePlanner``: mirror many tables of a source by mouse (issue 27's panel).

A grid of the tables ``db.plan_sources`` found (``PlanGrid``): per table whether it runs, its target,
its keys and where they come from, its strategy, rows, problems and notes (a suggested key's
evidence and risk). Edits change the plan that Dry run, Run and Save plan use; suggested keys run
only once accepted (keys never change once pushed), which the status line counts. A run goes on
a thread of its own, as the monitor pane's refreshes do, so the notebook stays usable: each table's
badge follows its push's progress events, then the ``PlanRun``.
"""

from __future__ import annotations

import dataclasses
import html
import threading
from typing import TYPE_CHECKING, Any

import ipywidgets as w

import openmirror_nb as om
from openmirror_nb._core.widgets.panel import RED, Panel
from openmirror_nb._core.widgets.plan_grid import PlanGrid

if TYPE_CHECKING:
    from openmirror_nb import MirroredDatabase, PlanRun, Source, SourcePlan

_WIDE = {"description_width": "initial"}


class SourcePlanner(Panel):
    """Plan, edit and run the mirroring of every table of a source.

    Args:
        db: The mirrored database.
        source: Any ``om.Source``: ``om.Catalog``, ``om.Jdbc``, ``om.DeltaFolder`` or a kind
            registered with ``om.register_source``.
        target_schema: The mirrored tables' schema (see ``db.plan_sources``).
        plan: An earlier plan of ``source`` (``om.load_plan``): its declared keys, targets,
            strategies and switches are kept.
        parallel: Tables pushed at a time by Run.

    Example:
        >>> om.widgets.SourcePlanner(db, om.Catalog("shop"), target_schema="shop")
    """

    def __init__(
        self,
        db: MirroredDatabase,
        source: Source,
        *,
        target_schema: str | None = None,
        plan: SourcePlan | None = None,
        parallel: int = 4,
    ) -> None:
        self._db, self._source, self._schema, self._parallel = db, source, target_schema, parallel
        self._plan: SourcePlan | None = None
        self._run: PlanRun | None = None
        self._edited = False
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()  # progress events come from the run's threads at once

        self.header = w.HTML(
            f"<b>Mirror the tables of</b> <code>{html.escape(repr(source))}</code> into "
            f"<code>{html.escape(str(db.target))}</code>"
        )
        self.plan_problems = w.HTML()
        self.accept_all = w.Checkbox(description="Accept every suggested key", indent=False, style=_WIDE)
        self.grid = PlanGrid(self._on_edit)
        self.dry_run_button = w.Button(description="Dry run", icon="eye", tooltip="Say what Run would push")
        self.run_button = w.Button(description="Run", icon="play", button_style="primary")
        self.path = w.Text(description="Plan file", placeholder="shop.yaml", style=_WIDE)
        self.save_button = w.Button(description="Save plan", icon="save")
        self.summary = w.HTML()
        super().__init__(
            [
                self.header,
                self.plan_problems,
                self.accept_all,
                self.grid,
                w.HBox([self.dry_run_button, self.run_button, self.path, self.save_button]),
                self.summary,
            ],
            css_class="openmirror-source-planner",
        )
        self.accept_all.observe(self._on_accept_all, names="value")
        self.dry_run_button.on_click(lambda _: self._start(dry_run=True))
        self.run_button.on_click(lambda _: self._start(dry_run=False))
        self.save_button.on_click(lambda _: self.save())
        with self._guard("Planning the source failed"):
            self._show(db.plan_sources(source, target_schema=target_schema, like=plan))

    # -- public surface -------------------------------------------------------------------------

    @property
    def plan(self) -> SourcePlan | None:
        """The plan as the grid says now (``None`` if the source could not be planned)."""
        if self._plan is None:
            return None
        return dataclasses.replace(self._plan, tables=[row.planned() for row in self.grid.rows])

    @property
    def last_run(self) -> PlanRun | None:
        """What the last Run or Dry run did, once it ended."""
        return self._run

    @property
    def running(self) -> bool:
        """Whether a run started by a button is still going."""
        return self._thread is not None and self._thread.is_alive()

    def wait(self, timeout: float | None = None) -> PlanRun | None:
        """Wait for a run started by a button to end; what it did."""
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        return self._run

    def run(self, *, dry_run: bool = False) -> PlanRun | None:
        """Run the plan as edited (``dry_run``: write nothing, say what each table would push),
        here and now; the buttons run this on a thread. What went wrong shows in the status line."""
        plan = self._checked()
        if plan is None:
            self._busy(False)  # a button's thread set it
            return None
        self._busy(True)
        for row in self.grid.rows:
            row.set_badge("waiting" if row.enabled.value else "")
        self.summary.value = ""
        self._say("Dry run…" if dry_run else f"Running {sum(t.enabled for t in plan.tables)} tables…")
        run: PlanRun | None = None
        try:
            with self._guard("The run failed"):
                run = self._db.run_plan(
                    plan, parallel=self._parallel, dry_run=dry_run, progress=self._on_progress
                )
        finally:
            self._busy(False)
        if run is not None:
            self._finish(run)
        return run

    def save(self) -> None:
        """Write the plan as edited to the path in the Plan file field (``om.load_plan`` reads it)."""
        path, plan = self.path.value.strip(), self._typed()
        if plan is None:
            return
        if not path:
            self._say("Type a path for the plan file (shop.yaml), then Save plan.", error=True)
            return
        with self._guard(f"Saving the plan to {path} failed", always=True) as failed:
            plan.save(path)
        if not failed:
            self._say(f"Saved the plan to {path}.")

    # -- handlers -------------------------------------------------------------------------------

    def _start(self, *, dry_run: bool) -> None:
        if self.running:
            return
        self._busy(True)  # at once: a second click before the thread starts must not run twice
        self._thread = threading.Thread(
            target=self._run_here, args=(dry_run,), name="openmirror-plan-run", daemon=True
        )
        self._thread.start()

    def _run_here(self, dry_run: bool) -> None:
        """A button's run, on its thread: nothing may escape it (a thread's traceback reaches only
        the kernel's log) and the panel is usable after it, whatever happened."""
        try:
            with self._guard("The run failed"):
                self.run(dry_run=dry_run)
        finally:
            self._busy(False)

    def _on_edit(self) -> None:
        self._edited = True
        self._say("Edited: Dry run or Run checks the plan again first; Save plan keeps it as it is.")

    def _on_accept_all(self, change: dict[str, Any]) -> None:
        for row in self.grid.rows:
            if row.suggested:
                row.accept.value = change["new"]

    def _on_progress(self, event: om.ProgressEvent) -> None:
        ended = {om.Finished: "ok", om.PushFailed: "failed"}
        status = next((s for kind, s in ended.items() if isinstance(event, kind)), "running")
        with self._lock:
            try:
                row = self.grid.row(event.table)
            except KeyError:
                return
            row.set_badge(status, title=event.text)

    # -- steps ----------------------------------------------------------------------------------

    def _checked(self) -> SourcePlan | None:
        """The plan to run: an edited one planned again with its edits (``like=``), so its
        problems are today's; ``None`` (and the status line says why) when it cannot be."""
        plan = self._typed()
        if plan is None or not self._edited:
            return plan
        with self._guard("Checking the edited plan failed") as failed:
            self._show(self._db.plan_sources(self._source, target_schema=self._schema, like=plan))
        return None if failed else self._plan

    def _typed(self) -> SourcePlan | None:
        """The plan as edited, or ``None`` and the first row's trouble in the status line."""
        for row in self.grid.rows:
            trouble = row.trouble()
            if trouble:
                self._say(trouble, error=True)
                return None
        return self.plan

    def _show(self, plan: SourcePlan) -> None:
        self._plan, self._edited = plan, False
        self.grid.show(plan)
        self.plan_problems.value = "".join(
            f"<div style='color:{RED}'>{html.escape(p)}</div>" for p in plan.problems
        )
        if self.accept_all.value:
            self._on_accept_all({"new": True})
        self._say(f"{plan._summary()}.")  # it counts the suggested keys to accept

    def _busy(self, busy: bool) -> None:
        for button in (self.dry_run_button, self.run_button):
            button.disabled = busy
        self.accept_all.disabled = busy
        for row in self.grid.rows:
            row.lock(busy)

    def _finish(self, run: PlanRun) -> None:
        self._run = run
        for result in run.tables:
            try:
                row = self.grid.row(result.source)
            except KeyError:
                continue
            row.set_badge(result.status, title=result.reason)
        failed = "".join(
            f"<div style='color:{RED}'><b>{html.escape(t.table)}</b>: {html.escape(t.reason)}</div>"
            for t in run.failed
        )
        self.summary.value = f"<div class='om-run-summary'><b>{html.escape(run.summary())}</b>{failed}</div>"
        if run.failed:
            self._say(
                f"{len(run.failed)} of {len(run.tables)} tables failed (why is above); the others ran.",
                error=True,
            )
        else:
            self._say("Dry run done: nothing was written." if run.dry_run else "Run done.")
