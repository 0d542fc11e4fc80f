"""The shape a saved plan must have: each value of the file checked as it is read, and refused
with one line that names the file, the table, the value and the fix (``ConfigError``)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any, NoReturn, TypeVar

from openmirror_nb._core.errors import ConfigError, InvalidNameError, did_you_mean
from openmirror_nb._core.sources.catalog import Catalog
from openmirror_nb._core.sources.delta_folder import DeltaFolder
from openmirror_nb._core.sources.jdbc import Jdbc
from openmirror_nb._core.sources.plan import FIELDS, KEY_ORIGINS, STRATEGIES, PlannedTable
from openmirror_nb._core.sources.table import Source
from openmirror_nb._core.table_names import check_table_name

T = TypeVar("T")
SOURCE_FIELDS: dict[str, tuple[str, ...]] = {
    "catalog": ("kind", "database"),
    "delta_folder": ("kind", "path"),
    "jdbc": ("kind", "url", "user", "schema", "password_env", "password_secret", "properties", "driver"),
}
_REFERENCE = (
    "password_env: NAME (an environment variable holding it) or password_secret: <Key Vault secret URL>"
)


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
        """The source, built from its entries; a password or credentials in it are refused."""
        kind = data.get("kind")
        self.one_of(kind, "source kind", SOURCE_FIELDS)
        if "password" in data:
            self.fail(
                f"source holds a password, which a plan file never does; remove it and write {_REFERENCE}"
            )
        self.mapping(data, f"source ({kind})", SOURCE_FIELDS[str(kind)])
        if kind == "catalog":
            return self.checked("source", lambda: Catalog(self.text(data.get("database"), "source database")))
        if kind == "delta_folder":
            return self.checked("source", lambda: DeltaFolder(self.text(data.get("path"), "source path")))
        args = {k: v for k, v in data.items() if k not in ("kind", "url")}
        url = self.text(data.get("url"), "source url")
        built = self.checked("source", lambda: Jdbc(url, **args))
        if (
            built.url != url
            or built.has_unsaved_secrets
            or len(built.properties) != len(args.get("properties") or {})
        ):
            self.fail(
                f"source holds credentials (in its url or properties); remove them and write {_REFERENCE}"
            )
        return built

    def table(self, data: Any, index: int) -> PlannedTable:
        """One entry of ``tables``; missing entries take a new plan's defaults."""
        name = data.get("source") if isinstance(data, Mapping) else None
        what = f"table {name!r}" if isinstance(name, str) else f"table #{index + 1}"
        entry = self.mapping(data, what, FIELDS)
        source = self.text(entry.get("source"), f"{what}: source")
        table = self.checked(what, lambda: check_table_name(self.text(entry.get("table"), f"{what}: table")))
        keys = self.keys(entry.get("keys", []), what)
        origin, strategy = entry.get("key_origin"), entry.get("strategy", "snapshot")
        if origin is not None:
            self.one_of(origin, f"{what}: key_origin", KEY_ORIGINS)
        self.one_of(strategy, f"{what}: strategy", STRATEGIES)
        watermark = entry.get("watermark")
        if watermark is not None:
            self.text(watermark, f"{what}: watermark")
        deletes = self.flag(
            entry.get("detect_deletes", strategy in ("snapshot", "delta_sync")), f"{what}: detect_deletes"
        )
        self.consistent(what, keys, origin, strategy, watermark, deletes)
        rows = entry.get("rows")
        if rows is not None and (isinstance(rows, bool) or not isinstance(rows, int) or rows < 0):
            self.fail(f"{what}: rows {rows!r} is not a count; write a number, or null when unknown")
        problems = tuple(
            self.text(p, f"{what}: problem")
            for p in self.list(entry.get("problems", []), f"{what}: problems")
        )
        enabled = self.flag(entry.get("enabled", True), f"{what}: enabled")
        return PlannedTable(
            source, table, keys, origin, strategy, watermark, deletes, enabled, rows, problems
        )

    def keys(self, value: Any, what: str) -> tuple[str, ...]:
        keys = [self.text(k, f"{what}: key") for k in self.list(value, f"{what}: keys")]
        if len(set(keys)) != len(keys):
            self.fail(f"{what}: keys {keys} repeat a column; list each key column once")
        return tuple(keys)

    def consistent(
        self, what: str, keys: tuple[str, ...], origin: Any, strategy: str, watermark: Any, deletes: bool
    ) -> None:
        """The rules between a table's entries: keys have an origin, strategies what they need."""
        if keys and origin is None:
            self.fail(
                f"{what}: keys {list(keys)} have no key_origin; write key_origin: declared for keys you chose"
            )
        if origin is not None and not keys:
            self.fail(f"{what}: key_origin {origin!r} without keys; list the keys, or write key_origin: null")
        if strategy in ("incremental", "append") and watermark is None:
            self.fail(f"{what}: strategy {strategy} reads past a watermark column; write watermark: <column>")
        if strategy == "append" and keys:
            self.fail(f"{what}: strategy append writes no key columns; write keys: [] and key_origin: null")
        if strategy == "append" and deletes:
            self.fail(f"{what}: strategy append only inserts; write detect_deletes: false")
        if strategy in ("snapshot", "delta_sync") and not deletes:
            self.fail(f"{what}: strategy {strategy} always mirrors deletes; write detect_deletes: true")
