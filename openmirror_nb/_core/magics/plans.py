"""The ``%openmirror`` verbs of many tables: ``discover`` (plan a source) and ``run`` (mirror a
plan), each a call of the API."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, Protocol

from IPython.core.error import UsageError

from openmirror_nb._core.errors import did_you_mean
from openmirror_nb._core.magics.parser import PROG

if TYPE_CHECKING:
    from openmirror_nb import MirroredDatabase, PlanRun, SourcePlan

_SOURCES = ("Catalog", "Jdbc", "DeltaFolder")


class MagicState(Protocol):
    """What these verbs use of ``commands.MagicState``."""

    shell: Any

    def database(self) -> MirroredDatabase: ...


def discover(state: MagicState, args: argparse.Namespace) -> SourcePlan:
    """``plan = db.plan_sources(SRC, target_schema=S)``, then ``plan.save(FILE)`` with ``--save``."""
    source = _variable(state, args.source, verb="discover", kinds=_SOURCES, what="a source")
    plan = state.database().plan_sources(source, target_schema=args.target_schema)
    if args.save:
        plan.save(args.save)
    return plan


def run(state: MagicState, args: argparse.Namespace) -> PlanRun:
    """``db.run_plan(PLAN, parallel=N, dry_run=..., accept_suggested=...)``; PLAN is a variable
    holding a ``SourcePlan``, or a YAML file (``om.load_plan``)."""
    from openmirror_nb import load_plan

    namespace = state.shell.user_ns
    if args.plan in namespace:
        plan = _variable(state, args.plan, verb="run", kinds=("SourcePlan",), what="a SourcePlan")
    else:
        plan = load_plan(args.plan)
    return state.database().run_plan(
        plan, parallel=args.parallel, dry_run=args.dry_run, accept_suggested=args.accept_suggested
    )


def _variable(state: MagicState, name: str, *, verb: str, kinds: tuple[str, ...], what: str) -> Any:
    namespace = state.shell.user_ns
    if name not in namespace:
        known = [k for k, v in namespace.items() if type(v).__name__ in kinds and not k.startswith("_")]
        raise UsageError(f"{PROG} {verb}: no variable is named {name!r}.{did_you_mean(name, known)}")
    value = namespace[name]
    if type(value).__name__ not in kinds:
        raise UsageError(
            f"{PROG} {verb}: {name!r} is {type(value).__name__}, not {what} ({' or '.join(kinds)})."
        )
    return value
