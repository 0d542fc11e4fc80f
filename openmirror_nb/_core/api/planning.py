"""Planning many tables through the handle: ``plan_sources`` (discover a source, plan each table)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from openmirror_nb._core.api.base import DatabaseBase
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.table_names import identity, parse_table

if TYPE_CHECKING:
    from openmirror_nb._core.sources import SourcePlan, Strategy
    from openmirror_nb._core.sources.table import Source


class Planning(DatabaseBase):
    """The handle's planning methods (see ``MirroredDatabase``)."""

    def plan_sources(
        self,
        source: Source,
        *,
        target_schema: str | None = None,
        like: SourcePlan | None = None,
        suggest: bool = True,
        strategy: Strategy | None = None,
    ) -> SourcePlan:
        """Discover every table of ``source`` and plan how each is mirrored; nothing is written.

        Per table: its target (``target_schema.<name>``, by the naming rule), its keys and their
        origin (declared in ``like`` > primary key > unique constraint on NOT NULL columns >
        suggested from its rows), its strategy (the first registered one that fits: ``delta_sync``
        for a Delta table with its change data feed on, ``append`` by that column for a table the
        source numbers rows of (identity, serial, auto-increment) and declares no key for; else
        ``snapshot``), its row count, and its problems in words with the fix: columns the landing
        zone cannot hold, no key, a key that compares inexactly or differs from the mirrored
        table's, targets that meet after mapping, a strategy without the watermark it needs. Its
        notes say what nothing in the source guarantees: keys only today's rows make unique (rows
        profiled, distinct values, the risk and the fix), and what insert-only leaves out; the
        plan's summary counts the suggested keys. The plan says when the database would hold
        more than about 500 tables.

        Args:
            source: Any ``om.Source``: ``om.Catalog``, ``om.Jdbc``, ``om.DeltaFolder`` or a kind
                registered with ``om.register_source``.
            target_schema: The mirrored tables' schema (``Jdbc(schema=...)`` names the source's);
                ``None`` puts them at the landing zone's root (``dbo``).
            like: An earlier plan of this source (edited, or loaded with ``om.load_plan``): its
                declared keys, targets, strategies, watermarks, ``detect_deletes`` and ``enabled``
                are kept, and checked again against the source.
            suggest: Profile the rows of tables without a key constraint (``om.suggest_keys``:
                one or two aggregations each). ``False`` leaves them without keys.
            strategy: Every table's strategy (those ``like`` plans keep theirs), e.g. ``"cdc"`` to
                mirror a PostgreSQL database live with ``db.mirror_plan``; default: by what fits.

        Raises:
            ConfigError: ``source`` is not a source, cannot be reached or read, or ``like`` is
                a plan of another source.
            InvalidNameError: ``target_schema`` breaks the naming rule.

        Example:
            >>> src = om.Jdbc(url, user="etl", password_env="ERP_PASSWORD")
            >>> plan = db.plan_sources(src, target_schema="erp")
            >>> plan.save("erp.yaml")
        """
        from openmirror_nb._core.sources.planner import plan_sources

        existing = self.tables()
        # The mirror compares names case-folded: Shop.Orders in the database is shop.orders planned.
        held = {identity(*parse_table(name)): name for name in existing}

        def keys_of(table: str) -> tuple[str, ...] | None:
            name = held.get(identity(*parse_table(table)))
            meta = TableFolder.of(self.storage, name).read_metadata() if name else None
            return None if meta is None else meta.key_columns

        return plan_sources(
            source,
            target_schema=target_schema,
            like=like,
            suggest=suggest,
            keys_of=keys_of,
            existing=existing,
            strategy=strategy,
        )
