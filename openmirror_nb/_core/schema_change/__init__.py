"""Schema changes (design §7): ``changes.classify`` finds what a DataFrame changes and whether the
mirror absorbs it, ``plan.SchemaPlan`` holds that and what a reseed costs; ``run.apply_plan`` runs
the reseed it may take as one resumable operation (drop, wait, reload, wait, verify).
``db.plan_schema_change`` and ``db.apply_schema_change`` are the entry points."""

from __future__ import annotations

from openmirror_nb._core.schema_change.changes import Change, classify
from openmirror_nb._core.schema_change.plan import SchemaPlan, make_plan
from openmirror_nb._core.schema_change.run import ReseedResult

__all__ = ["Change", "ReseedResult", "SchemaPlan", "classify", "make_plan"]
