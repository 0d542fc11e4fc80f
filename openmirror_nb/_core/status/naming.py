"""What the status report says about table names: folders that are one table to the mirror, and
folders whose names the naming rule (``table_names``) refuses, such as the ``my%20table`` an older
version left when it percent-encoded a name it should have refused."""

from __future__ import annotations

import re
from urllib.parse import unquote

from openmirror_nb._core.errors import InvalidNameError
from openmirror_nb._core.landing_zone.blockers import Blocker
from openmirror_nb._core.landing_zone.discovery import TableLocation
from openmirror_nb._core.landing_zone.names import is_ignored
from openmirror_nb._core.model import TableRef
from openmirror_nb._core.storage.base import Storage
from openmirror_nb._core.table_names import suggest

_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")


def conflict(loc: TableLocation, others: list[TableLocation]) -> Blocker:
    """The folders of one table to the mirror, named on each of them."""
    folders = ", ".join(repr(o.folder) for o in others)
    drops = " or ".join(f"db.drop({str(t.ref)!r})" for t in (loc, *others))
    return Blocker(
        "name_conflict",
        f"folder {folders} names this table too ({loc.qualified}: the mirror compares names "
        "case-insensitively and puts root tables in dbo), so only one of them is mirrored; "
        f"remove the one you do not want: {drops}.",
    )


def allowed(loc: TableLocation) -> bool:
    """Whether ``db.push`` can address the folder: its name passes the rule as it is written."""
    try:
        return TableRef.parse(str(loc.ref)) == loc.ref
    except InvalidNameError:
        return False


def refused_note(loc: TableLocation) -> str:
    """For a table whose folder name the rule refuses (another tool made it)."""
    return (
        f"Its name breaks this toolkit's naming rule (try {suggest(str(loc.ref))!r}): db.push cannot "
        f"write to it; db.drop({str(loc.ref)!r}) removes it."
    )


def not_a_table(loc: TableLocation) -> str:
    """How status names a folder that holds nothing of a table, and what to do with it."""
    name = str(loc.ref)
    decoded = unquote(name)
    if _ESCAPE.search(name) and not allowed(loc):
        try:
            again = f"push it again as {str(TableRef.parse(decoded))!r}"
        except InvalidNameError:
            again = f"push it again as {suggest(decoded)!r}"
        return (
            f"{loc.folder}: left by a push of table {decoded!r} that an older openmirror_nb could not "
            f"finish (it wrote the name percent-encoded); it holds no data: remove it with "
            f"db.drop({name!r}) and {again}."
        )
    return f"{loc.folder}: a folder with no _metadata.json and no data files, not a table (yet)."


def not_tables(storage: Storage, empty: list[TableLocation]) -> list[str]:
    """Landing-zone items that are not tables, each with what the service does with it."""
    found = [
        f"{e.name}: a file at the landing-zone root, not a table; the mirror ignores it."
        for e in storage.list_dir("")
        if not e.is_dir and not is_ignored(e.name)
    ]
    return found + [not_a_table(loc) for loc in sorted(empty, key=lambda loc: loc.folder)]
