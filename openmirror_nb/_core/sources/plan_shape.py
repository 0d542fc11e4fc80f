"""The shape a saved plan must have: each value of the file checked as it is read, and refused
with one line that names the file, the table, the value and the fix (``ConfigError``)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any, NoReturn, TypeVar

from openmirror_nb._core.column_types import parse_type
from openmirror_nb._core.errors import ConfigError, InvalidNameError, did_you_mean
from openmirror_nb._core.feed_options import FEED_FIELDS, FeedOptions
from openmirror_nb._core.sources.plan import FIELDS, KEY_ORIGINS, PlannedTable, good_goal
from openmirror_nb._core.sources.plan_strategy import (
    DEFAULT,
    PlanStrategy,
    feed_problem,
    get_strategy,
    no_deletes,
    strategy_names,
)
from openmirror_nb._core.sources.registry import source_class, source_kinds
from openmirror_nb._core.sources.table import Source
from openmirror_nb._core.table_names import check_table_name

T = TypeVar("T")


class Shape:
    """The checks of one plan file, whose name every message starts with."""

    def __init__(self, where: str) -> None:
        self.where = where

    def fail(self, text: str) -> NoReturn:
        raise ConfigError(f"Plan file {self.where}: {text}.")

    def checked(self, what: str, build: Callable[[], T]) -> T:
        """``build()``, its naming or argument error said as this file's."""
        try:
            return build()
        except (InvalidNameError, ConfigError) as exc:
            self.fail(f"{what}: {str(exc).rstrip('.')}")

    def mapping(self, value: Any, what: str, allowed: Collection[str] = ()) -> dict[str, Any]:
        if not isinstance(value, Mapping):
            self.fail(
                f"{what} is {type(value).__name__}, not a mapping of names to values; save the plan again"
            )
        for key in value:
            if allowed and key not in allowed:
                hint = did_you_mean(str(key), allowed)
                self.fail(f"{what} has an unknown entry {key!r} (entries: {', '.join(allowed)}).{hint}")
        return dict(value)

    def list(self, value: Any, what: str) -> list[Any]:
        if not isinstance(value, list):
            self.fail(f"{what} is {type(value).__name__}, not a list; write it as a YAML list")
        return value

    def text(self, value: Any, what: str) -> str:
        if not isinstance(value, str) or not value:
            self.fail(f"{what} {value!r} is not a text; quote it (e.g. {what.rsplit(' ', 1)[-1]}: 'name')")
        return value

    def one_of(self, value: Any, what: str, choices: Collection[str]) -> None:
        if value not in choices:
            hint = did_you_mean(str(value), choices)
            self.fail(f"{what} {value!r} is not one of {', '.join(choices)}.{hint}")

    def flag(self, value: Any, what: str) -> bool:
        if not isinstance(value, bool):
            self.fail(f"{what} {value!r} is not true or false")
        return value

    def source(self, data: dict[str, Any]) -> Source:
        """The source, built by its registered kind (``from_dict``, which refuses entries it does
        not take, and a JDBC source a password or credentials)."""
        kind = data.get("kind")
        kinds = source_kinds()
        if kind not in kinds:
            self.fail(
                f"source kind {kind!r} is not one of {', '.join(kinds)}.{did_you_mean(str(kind), kinds)}"
                f"{_register('source', kind)}"
            )
        cls = self.checked("source", lambda: source_class(str(kind)))
        try:
            return cls.from_dict(data)
        except (InvalidNameError, ConfigError) as exc:
            self.fail(str(exc).rstrip("."))

    def table(self, data: Any, index: int) -> PlannedTable:
        """One entry of ``tables``; missing entries take a new plan's defaults."""
        name = data.get("source") if isinstance(data, Mapping) else None
        what = f"table {name!r}" if isinstance(name, str) else f"table #{index + 1}"
        entry = self.mapping(data, what, FIELDS)
        source = self.text(entry.get("source"), f"{what}: source")
        table = self.checked(what, lambda: check_table_name(self.text(entry.get("table"), f"{what}: table")))
        keys = self.keys(entry.get("keys", []), what)
        origin, strategy = entry.get("key_origin"), entry.get("strategy", DEFAULT)
        if origin is not None:
            self.one_of(origin, f"{what}: key_origin", KEY_ORIGINS)
        self.strategy(strategy, what)
        rules = self.checked(what, lambda: get_strategy(strategy))
        watermark = entry.get("watermark")
        if watermark is not None:
            self.text(watermark, f"{what}: watermark")
        deletes = self.flag(entry.get("detect_deletes", rules.deletes is True), f"{what}: detect_deletes")
        self.consistent(what, keys, origin, (strategy, rules), watermark, deletes)
        rows = entry.get("rows")
        if rows is not None and (isinstance(rows, bool) or not isinstance(rows, int) or rows < 0):
            self.fail(f"{what}: rows {rows!r} is not a count; write a number, or null when unknown")
        problems = tuple(
            self.text(p, f"{what}: problem")
            for p in self.list(entry.get("problems", []), f"{what}: problems")
        )
        notes = tuple(
            self.text(n, f"{what}: note") for n in self.list(entry.get("notes", []), f"{what}: notes")
        )
        enabled = self.flag(entry.get("enabled", True), f"{what}: enabled")
        feed = self.feed(entry.get("feed"), what)
        types = self.types(entry.get("types", {}), what)
        goal = self.goal(entry.get("freshness_goal"), what)
        row = (source, table, keys, origin, strategy, watermark, deletes, enabled, rows, problems, feed)
        planned: PlannedTable = self.checked(
            what, lambda: PlannedTable(*row, notes=notes, types=types, freshness_goal=goal)
        )
        unread = feed_problem(planned)
        if unread:
            self.fail(f"{what}: {unread}")
        return planned

    def feed(self, value: Any, what: str) -> FeedOptions | None:
        """A table's ``feed``: each entry a ``FeedOptions`` field; none (the file of a plan
        without one, as earlier versions wrote it): ``None``."""
        if value is None:
            return None
        entry = self.mapping(value, f"{what}: feed", FEED_FIELDS)
        if "order_by" in entry:
            entry["order_by"] = self.list(entry["order_by"], f"{what}: feed order_by")
        return self.checked(f"{what}: feed", lambda: FeedOptions(**entry))

    def types(self, value: Any, what: str) -> dict[str, str]:
        """A table's declared column ``types``: column -> ``decimal(p,s)`` or ``string``."""
        entry = self.mapping(value, f"{what}: types")
        for column, text in entry.items():
            self.text(column, f"{what}: types column")
            try:
                parse_type(text, column=column)
            except ConfigError as exc:
                self.fail(f"{what}: {str(exc).rstrip('.')}")
        return {str(c): str(t).strip().lower() for c, t in entry.items()}

    def goal(self, value: Any, what: str) -> float | None:
        """A table's ``freshness_goal``: seconds above 0, or none (left out, or null)."""
        if value is not None and not good_goal(value):
            self.fail(
                f"{what}: freshness_goal {value!r} is not a number of seconds above 0; write e.g. "
                "freshness_goal: 300, or leave it out for no goal"
            )
        goal: float | None = value  # as written (300 stays 300): the plan saves again byte for byte
        return goal

    def strategy(self, value: Any, what: str) -> None:
        names = strategy_names()
        if value not in names:
            self.fail(
                f"{what}: strategy {value!r} is not one of {', '.join(names)}."
                f"{did_you_mean(str(value), names)}{_register('strategy', value)}"
            )

    def keys(self, value: Any, what: str) -> tuple[str, ...]:
        keys = [self.text(k, f"{what}: key") for k in self.list(value, f"{what}: keys")]
        if len(set(keys)) != len(keys):
            self.fail(f"{what}: keys {keys} repeat a column; list each key column once")
        return tuple(keys)

    def consistent(
        self,
        what: str,
        keys: tuple[str, ...],
        origin: Any,
        strategy: tuple[str, PlanStrategy],
        watermark: Any,
        deletes: bool,
    ) -> None:
        """The rules between a table's entries: keys have an origin, strategies what they need."""
        name, rules = strategy
        if keys and origin is None:
            self.fail(
                f"{what}: keys {list(keys)} have no key_origin; write key_origin: declared for keys you chose"
            )
        if origin is not None and not keys:
            self.fail(f"{what}: key_origin {origin!r} without keys; list the keys, or write key_origin: null")
        if rules.watermark and watermark is None:
            self.fail(f"{what}: strategy {name} reads past a watermark column; write watermark: <column>")
        if rules.keys is False and keys:
            self.fail(f"{what}: strategy {name} writes no key columns; write keys: [] and key_origin: null")
        if rules.deletes is False and deletes:
            self.fail(f"{what}: strategy {no_deletes(name, rules)}; write detect_deletes: false")
        if rules.deletes is True and not deletes:
            self.fail(f"{what}: strategy {name} always mirrors deletes; write detect_deletes: true")


def _register(what: str, name: Any) -> str:
    """The call that registers a source kind or strategy of one's own, for a name no one did."""
    return f" One of your own is registered first: om.register_{what}({name!r}, 'package.module:Class')"
