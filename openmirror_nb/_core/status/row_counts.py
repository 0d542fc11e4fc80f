"""Row counts of one table compared (``db.reconcile`` and ``db.status(reconcile=True)``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Reconciliation:
    """Row counts of one table from up to three places, and which one disagrees.

    Attributes:
        mirrored_rows: Rows of the mirrored Delta table (``None``: could not be read, see ``notes``).
        state_rows: Rows in the key state, what the publisher last pushed.
        source_rows: Rows of the source DataFrame, when one was given.
        verdict: ``"match"``, ``"mismatch"`` or ``"incomplete"`` (fewer than two counts).
        message: In words: which count differs from the others, and what that usually means.
        notes: Why a count is missing.
    """

    table: str
    mirrored_rows: int | None
    state_rows: int | None
    source_rows: int | None
    verdict: Literal["match", "mismatch", "incomplete"]
    message: str
    notes: tuple[str, ...] = ()

    def __repr__(self) -> str:
        counts = ", ".join(
            f"{name} {'?' if value is None else f'{value:,}'}"
            for name, value in (
                ("mirrored", self.mirrored_rows),
                ("key state", self.state_rows),
                ("source", self.source_rows),
            )
        )
        return f"Reconciliation({self.table}: {self.verdict}; {counts}; {self.message})"
