"""Many tables from one declaration: a source (a Spark catalog database, a JDBC schema, a folder
of Delta tables) discovered into a ``SourcePlan`` of its tables' targets, keys, strategies and
problems, saved as a YAML file a person edits, and run (``run``: every table pushed by its
strategy, in parallel, each failure its own). Source kinds and strategies are registries
(``registry``, ``plan_strategy``): the built-in ones are registered as one of your own is.

It may import the base parts, storage, the landing zone, the pipeline (the Delta reader, the
push's column and key checks), ``keys`` (suggestions) and ``table_info``; the API imports it.
"""

from __future__ import annotations

from openmirror_nb._core.sources.catalog import Catalog
from openmirror_nb._core.sources.delta_folder import DeltaFolder
from openmirror_nb._core.sources.jdbc import Jdbc
from openmirror_nb._core.sources.plan import KeyOrigin, PlannedTable, SourcePlan, Strategy
from openmirror_nb._core.sources.plan_file import load_plan
from openmirror_nb._core.sources.plan_strategy import (
    PlanStrategy,
    get_strategy,
    register_strategy,
    strategy_names,
)
from openmirror_nb._core.sources.registry import register_source
from openmirror_nb._core.sources.run_result import PlanRun, PlanTableRun, RunStatus
from openmirror_nb._core.sources.table import Source, SourceTable

__all__ = [
    "Catalog",
    "DeltaFolder",
    "Jdbc",
    "KeyOrigin",
    "PlanRun",
    "PlanStrategy",
    "PlanTableRun",
    "PlannedTable",
    "RunStatus",
    "Source",
    "SourcePlan",
    "SourceTable",
    "Strategy",
    "get_strategy",
    "load_plan",
    "register_source",
    "register_strategy",
    "strategy_names",
]
