"""Schema changes through the handle: ``plan_schema_change`` and ``apply_schema_change``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.api.base import DatabaseBase
from openmirror_nb._core.errors import LandingZoneError
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.model import DEFAULT_ROWS_PER_FILE
from openmirror_nb._core.progress import Progress
from openmirror_nb._core.table_info import describe

if TYPE_CHECKING:
    from openmirror_nb._core.schema_change.plan import SchemaPlan
    from openmirror_nb._core.schema_change.run import ReseedResult


class SchemaChanges(DatabaseBase):
    """The handle's schema-change methods (see ``MirroredDatabase``)."""

    def plan_schema_change(self, table: str, df: Any, *, keys: Sequence[str] | None = None) -> SchemaPlan:
        """How ``df`` (with ``keys``, default the table's) differs from ``table`` as last pushed:
        every change classified as absorbed by the mirror or needing a reseed, and what a reseed
        costs (rows and files to reload; the mirrored table is gone until the reload is mirrored).

        Example:
            >>> plan = db.plan_schema_change("sales.orders", df)
            >>> plan.needs_reseed
        """
        from openmirror_nb._core.pipeline.inputs.frame_input import as_spark_frame
        from openmirror_nb._core.schema_change.plan import make_plan
        from openmirror_nb._core.schema_change.run import plan_in_progress

        home = TableFolder.of(self.storage, table)
        frame = as_spark_frame(df, caller="plan_schema_change")
        running = plan_in_progress(home, frame.schema.json())
        if running is not None:  # a reseed of it runs (its folder may be gone): that plan goes on
            return running
        info = describe(home, known=self.tables)
        state = home.read_state()
        if state is None:
            raise LandingZoneError(
                f"Table {info.table!r} was not pushed by openmirror_nb: its last schema is unknown; "
                "reseed it by hand (db.drop(table, wait=True), then push)."
            )
        return make_plan(
            table=info.table,
            state_schema=state.schema,
            keys_before=tuple(state.key_columns),
            df_schema=frame.schema.json(),
            keys=tuple(keys) if keys else None,
            delimited=info.options.is_delimited,
            rows=frame.count(),
            rows_per_file=DEFAULT_ROWS_PER_FILE,
            rows_before=info.state_rows,
            options=info.options,
            last_push_seconds=state.load_seconds,
        )

    def apply_schema_change(
        self,
        plan: SchemaPlan,
        df: Any,
        *,
        confirm: str,
        wait: bool = True,
        timeout: float = 600.0,
        progress: Progress = None,
        on_step: Callable[[int, str, str], None] | None = None,
    ) -> ReseedResult:
        """Carry out ``plan`` with ``df``: a plain push when the mirror absorbs every change, else
        a reseed as one resumable operation: record the plan, drop the table folder, wait until
        the mirror no longer lists the table, load ``df`` as an initial load, then (``wait``)
        wait until the table is back and verify its row count. After a crash or a kernel
        restart, the same call continues from the step after the last one done.

        Args:
            confirm: The table's name, typed by the user: a reseed deletes the mirrored table.
            wait: Wait for the table to be back and verify it (the wait for the drop always runs).
            timeout: Seconds each wait may take.
            on_step: Called with (step, what it does, "running" | "done") (the wizard's lines).

        Raises:
            ReseedError: a step failed after the folder was deleted (the message says how to go on).
            MirrorWaitTimeoutError: a wait ran out before the folder was deleted.

        Example:
            >>> db.apply_schema_change(plan, df, confirm="sales.orders")
        """
        from openmirror_nb._core.pipeline.inputs.frame_input import as_spark_frame
        from openmirror_nb._core.pipeline.push.request import PushRequest
        from openmirror_nb._core.progress import resolve
        from openmirror_nb._core.schema_change.run import apply_plan
        from openmirror_nb._core.schema_change.waits import Mirror

        request = PushRequest.snapshot(
            table=plan.table,
            keys=plan.keys,
            lock_timeout=self.lock_timeout,
            partner=self.partner,
            table_options=plan.options,
        )
        return apply_plan(
            storage=self.storage,
            mirror=Mirror(self.target, self.storage, credential=self._credential),
            plan=plan,
            df=as_spark_frame(df, caller="apply_schema_change"),
            request=request,
            confirm=confirm,
            wait=wait,
            timeout=timeout,
            progress=resolve(progress),
            on_step=on_step,
        )
