"""The ``%openmirror`` verbs of many tables: ``discover`` (plan a source) and ``run`` (mirror a
plan), each a call of the API."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, Protocol

from IPython.core.error import UsageError

import openmirror_nb as om
from openmirror_nb._core.errors import did_you_mean
from openmirror_nb._core.magics.parser import PROG

if TYPE_CHECKING:
    from openmirror_nb import MirroredDatabase, PlanRun, SourcePlan

_SOURCE = "a source (om.Catalog, om.Jdbc, om.DeltaFolder or a kind registered with om.register_source)"


class MagicState(Protocol):
    """What these verbs use of ``commands.MagicState``."""

    shell: Any

    def database(self) -> MirroredDatabase: ...


def discover(state: MagicState, args: argparse.Namespace) -> SourcePlan:
    """``plan = db.plan_sources(SRC, target_schema=S)``, then ``plan.save(FILE)`` with ``--save``."""
    source = _variable(state, args.source, verb="discover", kind=om.Source, what=_SOURCE)
    plan = state.database().plan_sources(source, target_schema=args.target_schema)
    if args.save:
        plan.save(args.save)
    return plan


def run(state: MagicState, args: argparse.Namespace) -> PlanRun:
    """``db.run_plan(PLAN, parallel=N, dry_run=..., accept_suggested=..., reread=...)``; PLAN is a variable
    holding a ``SourcePlan``, or a YAML file (``om.load_plan``)."""
    from openmirror_nb import load_plan

    namespace = state.shell.user_ns
    if args.plan in namespace:
        plan = _variable(state, args.plan, verb="run", kind=om.SourcePlan, what="a SourcePlan")
    else:
        plan = load_plan(args.plan)
    return state.database().run_plan(
        plan,
        parallel=args.parallel,
        dry_run=args.dry_run,
        accept_suggested=args.accept_suggested,
        reread=args.reread,
    )


def _variable(state: MagicState, name: str, *, verb: str, kind: type, what: str) -> Any:
    """The notebook variable ``name``, which must be a ``kind`` (a source: any ``om.Source``, so a
    registered kind of one's own too)."""
    namespace = state.shell.user_ns
    if name not in namespace:
        known = [k for k, v in namespace.items() if not k.startswith("_") and isinstance(v, kind)]
        raise UsageError(f"{PROG} {verb}: no variable is named {name!r}.{did_you_mean(name, known)}")
    value = namespace[name]
    if not isinstance(value, kind):
        raise UsageError(f"{PROG} {verb}: {name!r} is {type(value).__name__}, not {what}.")
    return value
