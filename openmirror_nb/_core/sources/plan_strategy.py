"""``PlanStrategy``: how a planned table is mirrored, registered by its name with
``om.register_strategy`` (a plan's ``strategy:`` entry names it), and the registry of them. A
strategy says what it needs of a planned table (keys, a watermark, deletes), which tables a new
plan gives it, its own problems, and how a run pushes it; the planner, the plan file, the runner
and the panels ask it, never its name. The built-in ones (``strategies``) are registered at the end
of this module through the same call, so a strategy of your own is one module and one call."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from openmirror_nb._core.feed_options import changed
from openmirror_nb._core.sources.registry import Registry

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from openmirror_nb._core.model import PushResult, SyncResult
    from openmirror_nb._core.sources.plan import PlannedTable, Strategy
    from openmirror_nb._core.sources.runner import Runner
    from openmirror_nb._core.sources.table import Source, SourceTable

DEFAULT = "snapshot"  # what the planner gives a table no registered strategy fits


@runtime_checkable
class PlanStrategy(Protocol):
    """How a planned table is mirrored: ``snapshot``, ``delta_sync``, ``incremental``, ``append``,
    or one registered with ``om.register_strategy``.

    ``push`` and ``would_push`` are the strategy's own; the rules and ``fits`` and ``problems``
    have the defaults of a snapshot-like strategy, which a class subclassing ``om.PlanStrategy``
    inherits. The registry makes one instance of the class, with no arguments.

    Attributes:
        keys: It writes key columns. ``False`` (``append``): rows are insert-only, the plan holds
            no keys and needs none. ``None`` (``cdc``): keys where the source has them (its primary
            key, a unique constraint, or declared; never suggested from the rows); a table without
            is mirrored insert-only.
        watermark: It reads the rows past a watermark column (``incremental``, ``append``).
        increasing: Its watermark must be a column the source numbers rows by (``append`` reads
            strictly past it, so a row committed late with a smaller value would be missed).
        deletes: ``True``: it always mirrors deletes (``snapshot``, ``delta_sync``); ``False``: it
            never does (``append``); ``None``: the plan's ``detect_deletes`` says (``incremental``;
            a new plan says no).
        feed: The ``FeedOptions`` its pushes read from a planned table's ``feed`` (a plan that
            sets another is refused): a snapshot push reads ``update_marker``, as ``db.push``
            does; a strategy that writes a change feed of its own reads none.

    Example:
        >>> class LiveRows(om.PlanStrategy):
        ...     def push(self, run, planned, frame):
        ...         return run.push(planned, frame.where("NOT deleted").drop("deleted"))
        ...     def would_push(self, run, planned, frame):
        ...         return f"would push {frame.where('NOT deleted').count():,} live rows"
        >>> om.register_strategy("live_rows", "my_package.live_rows:LiveRows")
    """

    keys: bool | None = True
    watermark: bool = False
    increasing: bool = False
    deletes: bool | None = True
    feed: tuple[str, ...] = ("update_marker",)

    def fits(self, table: SourceTable) -> bool:
        """Whether a new plan gives ``table`` this strategy: the planner takes the first registered
        strategy that fits, else ``snapshot`` (``delta_sync`` fits a table with its change data
        feed on, ``append`` a table the source numbers rows of and declares no key for). Default
        ``False``."""
        return False

    def problems(
        self, empty: DataFrame, planned: PlannedTable, table: SourceTable, source: Source
    ) -> list[str]:
        """What ``planned`` lacks for this strategy beyond its keys, watermark and deletes, each in
        words with its fix (``empty``: a frame of the table's schema, no rows). Default: none."""
        return []

    def push(self, run: Runner, planned: PlannedTable, frame: DataFrame) -> PushResult | SyncResult:
        """Mirror ``planned`` (``frame``: the source table, read lazily). ``run`` is what the run
        shares: ``run.source``, ``run.storage``, and ``run.push(planned, frame)``, which pushes a
        frame as a snapshot of the table with the run's lock timeout and progress."""
        ...

    def would_push(self, run: Runner, planned: PlannedTable, frame: DataFrame) -> str:
        """What ``push`` would do, in words, writing nothing (``db.run_plan(dry_run=True)``)."""
        ...


def feed_problem(planned: PlannedTable) -> str | None:
    """Why ``planned.feed`` sets an option its strategy does not read, in words with the fix;
    ``None`` when it sets none (an unregistered strategy fails its table on its own when run)."""
    if planned.feed is None or planned.strategy not in STRATEGIES.names():
        return None
    read = get_strategy(planned.strategy).feed
    unread = [n for n in changed(planned.feed) if n not in read]
    if not unread:
        return None
    takes = f"it reads {' and '.join(read)} only" if read else "it writes a change feed of its own"
    return (
        f"strategy {planned.strategy} does not read feed {', '.join(unread)} ({takes}); "
        f"remove {'it' if len(unread) == 1 else 'them'} from the feed"
    )


def no_deletes(name: str, strategy: PlanStrategy) -> str:
    """How a plan is told that strategy ``name`` mirrors no deletes: an insert-only one inserts."""
    return f"{name} only inserts" if strategy.keys is False else f"{name} mirrors no deletes"


STRATEGIES = Registry("strategy", "om.register_strategy", PlanStrategy, make=lambda cls: cls())


def register_strategy(name: str, target: str | type[PlanStrategy], /, *, clobber: bool = False) -> None:
    """Register a strategy: plans may then name it (``strategy: NAME`` in a plan file, the panel's
    strategy list), and a run mirrors those tables by it.

    Args:
        name: The strategy's name (lower-case letters, digits and ``_``).
        target: The class, a subclass of ``om.PlanStrategy`` (or one with every member of it), as
            ``"package.module:Class"`` (imported when first used) or the class itself; it is made
            once, with no arguments.
        clobber: Replace a strategy registered already to another class.

    Raises:
        ConfigError: as ``om.register_source`` does.

    Example:
        >>> om.register_strategy("live_rows", "my_package.live_rows:LiveRows")
    """
    STRATEGIES.register(name, target, clobber=clobber)


def get_strategy(name: Strategy) -> PlanStrategy:
    """The strategy registered as ``name`` (its one instance), imported on first use: what it needs
    of a planned table (``keys``, ``watermark``, ``deletes``) and how it pushes one.

    Raises:
        ConfigError: ``name`` is not registered, or its class cannot be imported or lacks a
            member; the message names the registering call.

    Example:
        >>> om.get_strategy("append").keys
        False
    """
    found: PlanStrategy = STRATEGIES.get(name)
    return found


def strategy_names() -> tuple[str, ...]:
    """The registered strategies' names, the built-ins first: what a plan's ``strategy`` may be.

    Example:
        >>> om.strategy_names()
        ('snapshot', 'delta_sync', 'incremental', 'append', 'cdc')
    """
    return STRATEGIES.names()


def strategy_for(table: SourceTable) -> Strategy:
    """The strategy a new plan gives ``table`` (a ``SourceTable``): the first registered one that
    fits it, else ``snapshot``."""
    return next((n for n in strategy_names() if get_strategy(n).fits(table)), DEFAULT)


def readers() -> str:
    """The strategies that read a watermark, in words (``incremental and append``)."""
    names = [n for n in strategy_names() if get_strategy(n).watermark]
    return " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)


# The built-ins, registered as any other strategy is.
register_strategy("snapshot", "openmirror_nb._core.sources.strategies:Snapshot")
register_strategy("delta_sync", "openmirror_nb._core.sources.strategies:DeltaSync")
register_strategy("incremental", "openmirror_nb._core.sources.strategies:Incremental")
register_strategy("append", "openmirror_nb._core.sources.strategies:Append")
register_strategy("cdc", "openmirror_nb._core.sources.cdc_strategy:Cdc")
