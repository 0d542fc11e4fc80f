"""Which folders of a landing zone are tables, as the service scans them (contract §1), and
which of them are one table to the mirror.

Tables at the landing-zone root land in schema ``dbo``; ``<schema>.schema/<table>`` folders name
their schema; every ``_``-prefixed item is ignored. Runs over any ``Storage``, so the publisher,
the local mirror and the status report see the same tables, locally and on OneLake.

Folder names are case-sensitive but the mirrored tables are not: folders whose names differ only
by case (or Unicode form), or ``orders`` at the root and ``dbo.schema/orders``, are one table
(``table_names.identity``). A first push refuses to make a second spelling (``check_unique``);
folders made by hand are grouped by ``spellings`` so the mirror and status report them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from openmirror_nb._core.errors import InvalidNameError
from openmirror_nb._core.landing_zone.names import DEFAULT_SCHEMA, SCHEMA_SUFFIX, is_ignored
from openmirror_nb._core.model import TableRef
from openmirror_nb._core.storage.base import Storage
from openmirror_nb._core.table_names import MAX_NAME_BYTES, fold, identity


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
    def identity(self) -> str:
        """The table the mirror makes of the folder, case-folded (``table_names.identity``)."""
        return identity(self.schema, self.name)

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


def spellings(locations: Iterable[TableLocation]) -> dict[str, list[TableLocation]]:
    """Folders that are one table to the mirror, by table folder: the others of its identity."""
    groups: dict[str, list[TableLocation]] = {}
    for loc in locations:
        groups.setdefault(loc.identity, []).append(loc)
    shared = [group for group in groups.values() if len(group) > 1]
    return {loc.folder: [o for o in group if o is not loc] for group in shared for loc in group}


def check_unique(storage: Storage, ref: TableRef) -> None:
    """Refuse a first push that would make a second spelling of a table or schema already there.

    Raises:
        InvalidNameError: naming the existing table (or schema) and the name to push to instead.
    """
    want_schema = fold(ref.schema or DEFAULT_SCHEMA)
    root = _visible_dirs(storage, "")
    for entry in root:
        schema = entry[: -len(SCHEMA_SUFFIX)] if entry.endswith(SCHEMA_SUFFIX) else None
        if schema is not None and fold(schema) == want_schema:
            others = [TableLocation(schema, t, f"{entry}/{t}", True) for t in _visible_dirs(storage, entry)]
            _refuse_other_spelling(ref, others)
            if ref.schema is not None and schema != ref.schema:
                raise InvalidNameError(
                    f"Schema {ref.schema!r} of table {str(ref)!r} is schema {schema!r} of the landing "
                    f"zone spelled another way (folder {entry}; the mirror compares names "
                    f"case-insensitively); push to {f'{schema}.{ref.name}'!r}."
                )
    if want_schema == DEFAULT_SCHEMA:
        tables = [e for e in root if not e.endswith(SCHEMA_SUFFIX)]
        _refuse_other_spelling(ref, [TableLocation(DEFAULT_SCHEMA, t, t, False) for t in tables])


def _refuse_other_spelling(ref: TableRef, locations: list[TableLocation]) -> None:
    for loc in locations:
        if loc.identity == ref.identity and loc.ref != ref:
            moved = loc.in_schema_folder != bool(ref.schema)
            where = "; tables at the root are in schema dbo" if moved else ""
            raise InvalidNameError(
                f"Table {str(ref)!r} is table {str(loc.ref)!r} of the landing zone spelled another way "
                f"(the mirror compares names case-insensitively{where}); push to {str(loc.ref)!r}, or "
                f"db.drop({str(loc.ref)!r}) first."
            )


def existing_ref(storage: Storage, table: str) -> TableRef:
    """``table`` as ``TableRef.parse`` reads it, or else the folder of exactly that name that
    the rule refuses (one an older version or another tool made), so it can be dropped.

    Raises:
        InvalidNameError: the rule refuses the name and no such folder exists.
    """
    try:
        return TableRef.parse(table)
    except InvalidNameError as refused:
        found = next((t.ref for t in discover_tables(storage) if str(t.ref) == table), None)
        if found is None:
            raise
        if len(found.key.encode()) > MAX_NAME_BYTES:
            raise InvalidNameError(
                f"{refused} The folder {found.folder!r} exists, but its name is too long for this "
                "toolkit to move it: delete it by hand (OneLake explorer, or a file manager)."
            ) from None
        return found


def _visible_dirs(storage: Storage, folder: str) -> list[str]:
    return [e.name for e in storage.list_dir(folder) if e.is_dir and not is_ignored(e.name)]
