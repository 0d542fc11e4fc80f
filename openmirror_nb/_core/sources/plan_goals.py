"""A plan's freshness goals, stored where ``db.status`` reads them (``landing_zone.freshness_log``)
as a run of the plan starts: the goal of each enabled table whose entry has one
(``freshness_goal``), written only where it differs from the goal stored. An entry without a goal
leaves the stored one be: a plan cannot clear a goal that ``db.set_freshness_goal`` set."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from openmirror_nb._core.errors import OpenMirrorError, user_line
from openmirror_nb._core.landing_zone.freshness_log import read_goals, write_goal
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.sources.plan import PlannedTable
from openmirror_nb._core.storage.base import Storage

log = logging.getLogger("openmirror_nb")


def store_goals(storage: Storage, tables: Iterable[PlannedTable]) -> None:
    """Store the goals of ``tables`` (see the module docstring). Goals only measure: one that
    cannot be stored fails no table's run, it is logged."""
    goals = [(t, t.freshness_goal) for t in tables if t.enabled and t.freshness_goal is not None]
    if not goals:
        return  # nothing read: a plan without goals costs its run nothing
    try:
        stored = read_goals(storage)
        for planned, seconds in goals:
            try:
                key = TableFolder.of(storage, planned.table).lock_name
            except OpenMirrorError:
                continue  # a target name the rule refuses: that table's run fails with the reason
            if stored.get(key) != seconds:
                write_goal(storage, key, seconds)
    except OpenMirrorError as exc:
        log.warning("The plan's freshness goals could not be stored: %s", user_line(exc))
