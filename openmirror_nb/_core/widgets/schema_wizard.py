"""``SchemaWizard``: a schema change planned, confirmed and carried out by mouse (design §7).

One ``VBox`` of Fabric-supported widgets only (no ``Output``): the plan (each change with what it
takes, and what a reseed costs), the table's name typed as confirmation (reseeds only: a reseed
deletes the mirrored table until the reload is mirrored), then one line per reseed step with the
reload's progress bar, and the verification at the end. A failed step shows with its reason and
a Resume button, which runs the same plan with the same DataFrame again: the reseed continues
from that step. Planning and running are the API's (``db.plan_schema_change``,
``db.apply_schema_change``); the panel lays out their results and computes nothing itself.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ipywidgets as w

from openmirror_nb import ProgressEvent, ReseedError, WidgetProgress
from openmirror_nb._core.widgets.panel import RED, Panel

if TYPE_CHECKING:
    from collections.abc import Sequence

    from openmirror_nb import MirroredDatabase, ReseedResult, SchemaPlan

GREEN, GREY, BLUE = "#2e7d32", "#757575", "#1565c0"
_PHASE_COLOURS = {"running": BLUE, "done": GREEN, "done earlier": GREEN, "failed": RED}


class SchemaWizard(Panel):
    """Plan a schema change of ``table`` to ``df``'s schema, confirm it and carry it out.

    The plan is made at once. A plan the mirror absorbs needs no confirmation: its button pushes.
    A reseed runs only once the table's name is typed, and the panel follows its six steps.

    Args:
        db: The mirrored database.
        table: ``name`` or ``schema.name``.
        df: The DataFrame with the new schema (all the table's rows: a reseed reloads it).
        keys: The key columns from now on (default: the table's).
        wait: Wait until the mirror has the reloaded table back and verify its row count.
        timeout: Seconds each of the reseed's waits may take.
        plan: Called to make the plan (default ``db.plan_schema_change``); tests inject their own.
        apply: Called to carry it out (default ``db.apply_schema_change``).

    Example:
        >>> om.widgets.SchemaWizard(db, "sales.orders", df)
    """

    def __init__(
        self,
        db: MirroredDatabase,
        table: str,
        df: Any,
        *,
        keys: Sequence[str] | None = None,
        wait: bool = True,
        timeout: float = 600.0,
        plan: Callable[..., SchemaPlan] | None = None,
        apply: Callable[..., ReseedResult] | None = None,
    ) -> None:
        self._df = df
        self._wait, self._timeout = wait, timeout
        self._apply: Callable[..., ReseedResult] = apply or db.apply_schema_change
        self._plan: SchemaPlan | None = None
        self._result: ReseedResult | None = None
        self._phases: dict[int, str] = {}  # step -> "running" | "done" | "failed" | "done earlier"
        self._failure: tuple[int | None, str, bool] | None = None  # (step, reason, is a ReseedError)
        self._running = False
        self._callbacks: list[Callable[[ReseedResult], None]] = []

        self.header = w.HTML(
            f"<b>Schema change</b> of <code>{html.escape(table)}</code> in "
            f"<code>{html.escape(str(db.target))}</code>"
        )
        self.plan_view = w.HTML()
        self.confirm_note = w.HTML()
        self.name_box = w.Text(placeholder=table, layout=w.Layout(width="240px"))
        self.run_button = w.Button(description="Run", icon="play", disabled=True)
        self.resume_button = w.Button(
            description="Resume", icon="repeat", button_style="warning", layout=w.Layout(display="none")
        )
        self.steps_view = w.HTML()
        self.progress = WidgetProgress()
        self.progress.widget.layout.display = "none"  # shown once a push (the reload) begins
        self.result_view = w.HTML()
        super().__init__(
            [
                self.header,
                self.plan_view,
                w.HBox([self.confirm_note, self.name_box, self.run_button, self.resume_button]),
                self.steps_view,
                self.progress.widget,
                self.result_view,
            ],
            css_class="openmirror-schema-wizard",
        )
        self.layout.max_width = "1100px"  # the plan's notes wrap instead of stretching the panel

        self.name_box.observe(self._on_name, names="value")
        self.run_button.on_click(lambda _: self._run())
        self.resume_button.on_click(lambda _: self._run())
        with self._guard("Planning the schema change failed"):  # a cell that made a panel must not fail
            self._plan = (plan or db.plan_schema_change)(table, df, keys=list(keys) if keys else None)
        self._render()
        if self._plan is not None:
            self._say(self._hint())

    # -- public surface -------------------------------------------------------------------------

    @property
    def plan(self) -> SchemaPlan | None:
        """The plan shown (``None`` if it could not be made: the status line says why)."""
        return self._plan

    @property
    def result(self) -> ReseedResult | None:
        """What the run did, once it finished (``None`` before, or after a failure)."""
        return self._result

    def on_done(self, callback: Callable[[ReseedResult], None]) -> None:
        """Call ``callback(result)`` once the change is carried out."""
        self._callbacks.append(callback)

    # -- handlers -------------------------------------------------------------------------------

    def _on_name(self, change: dict[str, Any]) -> None:
        self._render()
        if self._plan is not None and self._failure is None and self._result is None:
            self._say(self._hint())

    def _on_step(self, step: int, what: str, phase: str) -> None:
        """``apply_schema_change``'s ``on_step``: called on the running thread, assigns values only."""
        self._phases[step] = phase
        self.steps_view.value = self._steps_html()

    def _on_progress(self, event: ProgressEvent) -> None:
        """The push's progress (a reseed's reload): the bar shows from its first event on."""
        self.progress.widget.layout.display = None
        self.progress(event)

    def _run(self) -> None:
        """Run (or resume) the plan; runs in the click handler, and the widgets it updates are
        sent to the browser as they change. Errors show in the panel, never raise."""
        plan = self._plan
        if plan is None or self._running or self._result is not None or not self._confirmed():
            return
        self._running, self._failure = True, None
        bar = self.progress.bar
        bar.value, bar.bar_style, self.progress.label.value = 0, "info", ""
        self.progress.widget.layout.display = "none"
        self.result_view.value = ""
        self._render()
        self._say(
            f"Reseeding {plan.table}: the mirrored table is gone until the reload is mirrored."
            if plan.needs_reseed
            else f"Pushing to {plan.table}…"
        )
        result: ReseedResult | None = None
        try:
            result = self._apply(
                plan,
                self._df,
                confirm=self.name_box.value if plan.needs_reseed else plan.table,
                wait=self._wait,
                timeout=self._timeout,
                progress=self._on_progress,
                on_step=self._on_step,
            )
        except ReseedError as exc:
            self._failed(exc.step, str(exc), resumable=True)
        except Exception as exc:
            reason = self._line(exc, f"Schema change of {plan.table} failed")
            self._failed(self._running_step(), reason, resumable=False)
        finally:
            self._running = False
        if result is not None:
            self._finished(result)
        self._render()

    # -- outcomes -------------------------------------------------------------------------------

    def _finished(self, result: ReseedResult) -> None:
        self._result = result
        if result.reseeded:
            # steps this call did not report were done by an earlier call (a resumed reseed), or,
            # without waiting, are left to the mirror
            for k in range(1, len(self._steps) + 1):
                if self._phases.get(k) != "done":
                    waited = k <= 4 or result.mirrored_rows is not None
                    self._phases[k] = "done earlier" if waited else "not waited for"
        if result.push is not None:  # the bar's label held a repr; say it in words
            what = "reload" if result.reseeded else "push"
            self.progress.label.value = html.escape(f"{what}: {result.push._summary()}")
        colour = GREEN if result.verified is not False else RED
        self.result_view.value = (
            f"<div class='om-reseed-result' style='color:{colour};line-height:1.5'>"
            f"<b>{html.escape(result.summary)}</b></div>"
        )
        self._say("")
        for callback in list(self._callbacks):
            callback(result)

    def _failed(self, step: int | None, reason: str, *, resumable: bool) -> None:
        if step is not None:
            for k in range(1, step):  # a reseed stops at a step only once those before are done
                if self._phases.get(k) != "done":
                    self._phases[k] = "done earlier"
            self._phases[step] = "failed"
        self._failure = (step, reason, resumable)
        steps = self._steps
        where = f"Step {step} of {len(steps)} ({steps[step - 1]}) failed" if step else "Failed"
        then = (
            "Resume continues the reseed from this step, with the same plan and DataFrame."
            if resumable
            else "Try again runs the same plan with the same DataFrame."
        )
        self.result_view.value = (
            f"<div class='om-reseed-failed' style='color:{RED};line-height:1.5'><b>{html.escape(where)}.</b> "
            f"<span class='om-reason'>{html.escape(reason)}</span>"
            f"<div style='color:{GREY}'>{then}</div></div>"
        )
        self._say("")

    # -- rendering ------------------------------------------------------------------------------

    def _render(self) -> None:
        plan = self._plan
        reseed = plan is not None and plan.needs_reseed
        started = self._running or self._failure is not None or self._result is not None
        self.plan_view.value = f"<div style='line-height:1.5'>{plan._repr_html_()}</div>" if plan else ""
        self.confirm_note.value = (
            f"To reseed, type the table's name, <code>{html.escape(plan.table)}</code>:"
            if plan is not None and reseed
            else ""
        )
        self.confirm_note.layout.display = self.name_box.layout.display = None if reseed else "none"
        self.name_box.disabled = started
        self.run_button.description = (
            "Running…" if self._running else "Done" if self._result else "Run reseed" if reseed else "Push"
        )
        self.run_button.button_style = "success" if self._result else "danger" if reseed else "primary"
        self.run_button.icon = "check" if self._result else "play"
        self.run_button.disabled = plan is None or started or not self._confirmed()
        failed = self._failure is not None and not self._running
        self.run_button.layout.display = "none" if failed else None
        self.resume_button.layout.display = None if failed else "none"
        if self._failure is not None:
            self.resume_button.description = "Resume" if self._failure[2] else "Try again"
        self.steps_view.value = self._steps_html() if reseed else ""

    def _steps_html(self) -> str:
        lines = []
        for k, what in enumerate(self._steps, start=1):
            phase = self._phases.get(k, "to do")
            colour = _PHASE_COLOURS.get(phase, GREY)
            slug = phase.replace(" ", "-")
            text = html.escape(f"step {k} of {len(self._steps)}: {what} — {phase}")
            if phase in ("running", "failed"):
                text = f"<b>{text}</b>"
            lines.append(f"<li class='om-step om-step-{slug}' style='color:{colour}'>{text}</li>")
        # widget HTML inherits the 28 px line-height of a widget row: six steps need less
        style = "list-style:none;padding-left:4px;margin:4px 0;line-height:1.6"
        return f"<ul class='om-steps' style='{style}'>{''.join(lines)}</ul>"

    @property
    def _steps(self) -> tuple[str, ...]:
        """The reseed's steps as the plan names them (none before there is a plan)."""
        return self._plan.steps if self._plan is not None else ()

    def _confirmed(self) -> bool:
        plan = self._plan
        return plan is not None and (not plan.needs_reseed or self.name_box.value == plan.table)

    def _running_step(self) -> int | None:
        return next((k for k, phase in self._phases.items() if phase == "running"), None)

    def _hint(self) -> str:
        plan = self._plan
        if plan is None or not plan.needs_reseed:
            what = "takes these changes as they come" if plan and plan.changes else "sees no schema change"
            return f"Push publishes df as a usual push: the mirror {what}."
        if self._confirmed():
            then = ", and waits until it is back" if self._wait else ""
            return f"Run reseed deletes the mirrored table and reloads df{then}."
        return f"Type {plan.table} to confirm the reseed."
