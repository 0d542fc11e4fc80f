"""Which folders of a landing zone are tables, as the service scans them (contract §1).

Tables at the landing-zone root land in schema ``dbo``; ``<schema>.schema/<table>`` folders name
their schema; every ``_``-prefixed item is ignored. Runs over any ``Storage``, so the publisher,
the local mirror and the status report see the same tables, locally and on OneLake.
"""

from __future__ import annotations

from dataclasses import dataclass

from openmirror_nb.landing_zone.names import DEFAULT_SCHEMA, SCHEMA_SUFFIX, is_ignored
from openmirror_nb.model import TableRef
from openmirror_nb.storage.base import Storage


@dataclass(frozen=True)
class TableLocation:
    """One table folder: ``folder`` relative to the landing zone, and the table it holds."""

    schema: str
    name: str
    folder: str
    # The schema comes from a "<schema>.schema" folder; else the table sits at the root (dbo).
    in_schema_folder: bool

    @property
    def qualified(self) -> str:
        """``schema.table``, the service's ``normalizedTableName``."""
        return f"{self.schema}.{self.name}"

    @property
    def ref(self) -> TableRef:
        """The table as ``db.push`` names it (``name`` or ``schema.name``)."""
        return TableRef(self.name, self.schema if self.in_schema_folder else None)


def discover_tables(storage: Storage) -> list[TableLocation]:
    """Every table folder of the landing zone, sorted by schema, name and folder."""
    found: list[TableLocation] = []
    for entry in _visible_dirs(storage, ""):
        if entry.endswith(SCHEMA_SUFFIX) and len(entry) > len(SCHEMA_SUFFIX):
            schema = entry[: -len(SCHEMA_SUFFIX)]
            found += [TableLocation(schema, t, f"{entry}/{t}", True) for t in _visible_dirs(storage, entry)]
        else:
            found.append(TableLocation(DEFAULT_SCHEMA, entry, entry, False))
    return sorted(found, key=lambda t: (t.schema, t.name, t.folder))


def _visible_dirs(storage: Storage, folder: str) -> list[str]:
    return [e.name for e in storage.list_dir(folder) if e.is_dir and not is_ignored(e.name)]
