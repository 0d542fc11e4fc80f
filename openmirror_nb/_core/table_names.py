"""What a table or schema name may be: the toolkit's own rule, enforced here and nowhere else.

The contract gives no character list or length limit (``landing-zone-contract.md`` §1.4): hyphens
and digits are seen working (bc2adls ``GLEntry-17``), the Fabric page itself turns "Table A" into
folder ``TableA``, and what the service does with other characters in a folder name is unknown.
A name that some layer percent-encodes (a Hadoop path, a URL, a SQL identifier) is where names
broke before, so the rule keeps to characters no layer rewrites:

- A name is NFC-normalised first and kept that way (a name typed decomposed and one typed
  composed are one name, in one folder).
- Letters and digits of any script, ``_`` and ``-``; combining marks after the first character
  (scripts that need them). No space, ``%``, ``/``, ``\\``, control or other punctuation: a
  refused name comes with the same name those characters removed.
- It starts with a letter or digit: the service ignores ``_`` items.
- No ``.``: it separates the schema from the table (``schema.table``).
- At most ``MAX_NAME_BYTES`` bytes of UTF-8 for ``schema.table`` together (and for its case-folded
  form): the longest file name the toolkit builds from it must fit the 255-byte limit of local
  file systems and of OneLake path segments.

Names are compared case-folded (``fold``): OneLake paths are case-sensitive, but the mirrored
tables and their SQL endpoint are not, so ``Sales.Orders`` and ``sales.orders`` are one table to
the mirror (``identity``); a table's lock is keyed on that identity.
"""

from __future__ import annotations

import re
import unicodedata
from typing import NoReturn

from openmirror_nb._core.errors import InvalidNameError

DEFAULT_SCHEMA = "dbo"  # where the service puts tables at the landing-zone root
SCHEMA_SUFFIX = ".schema"
FILE_NAME_BYTES = 255  # NAME_MAX of ext4/xfs/btrfs, and the length of a OneLake path segment
# The longest file name built from ``schema.table``: a reseed journal ``<key>.json`` while it is
# written under its temporary name ``_<name>.<32 hex>.tmp`` (storage write_bytes). The lock
# ``<identity>.lock`` and a dropped folder's trash entry ``<key>.<12 hex>.<8 hex>`` are shorter;
# tests/test_table_names.py builds every one of them to keep this honest.
LONGEST_SUFFIX = len("_") + len(".json") + len(".") + 32 + len(".tmp")
MAX_NAME_BYTES = FILE_NAME_BYTES - LONGEST_SUFFIX
RULE = (
    "names are letters, digits, '_' and '-', start with a letter or digit and fit "
    f"{MAX_NAME_BYTES} bytes of UTF-8 together; one '.' separates schema and table"
)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_EXTRA = frozenset("_-")
_FALLBACK = {"Table": "orders", "Schema": "sales"}


def nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def fold(text: str) -> str:
    """How names compare: NFC, case-folded (``Straße`` and ``STRASSE`` are one name)."""
    return nfc(nfc(text).casefold())


def identity(schema: str | None, name: str) -> str:
    """The table the mirror makes of a folder: ``dbo.orders`` for ``orders``, ``DBO.Orders``..."""
    return fold(f"{schema or DEFAULT_SCHEMA}.{name}")


def parse_table(table: str) -> tuple[str | None, str]:
    """``(schema, name)`` of ``"name"`` or ``"schema.name"``, NFC-normalised, both checked.

    Raises:
        InvalidNameError: the value breaks the rule (the message names the part, what is wrong,
            the rule and a name that would work).
    """
    if not isinstance(table, str):
        raise InvalidNameError(f"Table name {table!r} is not a string; pass 'name' or 'schema.name'.")
    value = nfc(table)
    parts = value.split(".")
    if len(parts) > 2:
        _refuse("Table", value, _dots(value), value)
    schema, name = (parts[0], parts[1]) if len(parts) == 2 else (None, parts[0])
    if schema is not None:
        check_name(schema, what="Schema", whole=value)
    check_name(name, what="Table", whole=value)
    key = name if schema is None else f"{schema}.{name}"
    size = max(len(key.encode()), len(fold(key).encode()))
    if size > MAX_NAME_BYTES:
        _refuse("Table", value, f"is {size} bytes in UTF-8 (case-folded)", value)
    return schema, name


def check_table_name(table: str) -> str:
    """``table`` as every call takes it, ``"name"`` or ``"schema.name"``, checked by the naming rule
    and NFC-normalised: what a push would write, before anything is written.

    Raises:
        InvalidNameError: the name breaks the rule; the message names the part, what is wrong and
            a name that would work.

    Example:
        >>> om.check_table_name("sales.orders")
        'sales.orders'
    """
    schema, name = parse_table(table)
    return name if schema is None else f"{schema}.{name}"


def check_name(value: str, *, what: str, whole: str | None = None) -> str:
    """Refuse a schema or table name (one part) that breaks the rule; return it NFC-normalised.

    ``whole``: the full ``table`` argument it came from, so the suggestion is one to pass as is.
    """
    part = nfc(value)
    problem = _problem(part)
    if problem is None and len(part.encode()) > MAX_NAME_BYTES:
        problem = f"is {len(part.encode())} bytes in UTF-8"
    if problem:
        _refuse(what, part, problem, whole if whole is not None else part)
    return part


def suggest(value: str) -> str:
    """A name like ``value`` that the rule allows: the refused characters removed, extra dots
    turned into ``_``, cut to fit the byte limit (``my table`` -> ``mytable``)."""
    parts = [p for p in nfc(value).split(".") if p.strip()] or [""]
    schema, name = (parts[0], "_".join(parts[1:])) if len(parts) > 1 else (None, parts[0])
    name = _clean(name) or _FALLBACK["Table"]
    if schema is None:
        return cut(name, MAX_NAME_BYTES)
    schema = cut(_clean(schema) or _FALLBACK["Schema"], MAX_NAME_BYTES // 2)
    return f"{schema}.{cut(name, MAX_NAME_BYTES - len(schema.encode()) - 1)}"


def _problem(part: str) -> str | None:
    if not part or not part.strip():
        return "is empty"
    if _CONTROL.search(part):
        return "contains a control character"
    if "/" in part or "\\" in part:
        return "contains a path separator"
    if part.startswith("_"):
        return "starts with '_' (the service ignores underscore items)"
    if part != part.strip():
        return "has leading or trailing spaces"
    if part.lower().endswith(SCHEMA_SUFFIX):
        return f"ends with '{SCHEMA_SUFFIX}' (the service would read it as a schema folder)"
    if "." in part:
        return "contains '.', which separates schema and table"
    bad = ["a space" if c == " " else repr(c) for c in sorted({c for c in part if not _allowed(c)})]
    if bad:
        return "contains " + (f"{', '.join(bad[:-1])} and {bad[-1]}" if len(bad) > 1 else bad[0])
    if not _starts_well(part):
        return "does not start with a letter or digit"
    return None


def _allowed(char: str) -> bool:
    kind = unicodedata.category(char)
    return kind[0] in "LM" or kind == "Nd" or char in _EXTRA


def _starts_well(part: str) -> bool:
    kind = unicodedata.category(part[0])
    return kind[0] == "L" or kind == "Nd"


def _dots(value: str) -> str:
    if ".." in value:
        return "contains '..'"
    return "has more than one '.'"


def _clean(part: str) -> str:
    kept = "".join(c for c in part if _allowed(c))
    while kept and not _starts_well(kept):
        kept = kept[1:]
    return kept


def cut(part: str, limit: int) -> str:
    """``part`` shortened to at most ``limit`` bytes of UTF-8, on a character boundary."""
    while len(part.encode()) > limit:
        part = part[:-1]
    return part


def _refuse(what: str, value: str, problem: str, whole: str) -> NoReturn:
    like = suggest(whole)
    raise InvalidNameError(f"{what} name {value!r} {problem}; choose a name like {like!r} ({RULE}).")
