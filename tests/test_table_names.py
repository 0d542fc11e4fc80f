"""The naming rule (``openmirror_nb._core.table_names``): what a table or schema name may be, the one-line
refusal with a name that works, case-folded identities, and a byte limit that fits every file name
the toolkit builds from a table name (checked against the real builders and a real file system)."""

from __future__ import annotations

import ast
import os
import re

import pytest

from openmirror_nb._core.errors import InvalidNameError, OpenMirrorError
from openmirror_nb._core.landing_zone import TableFolder
from openmirror_nb._core.landing_zone.discovery import TableLocation, spellings
from openmirror_nb._core.landing_zone.lifecycle import drop
from openmirror_nb._core.landing_zone.reseed_journal import reseed_path
from openmirror_nb._core.model import TableRef
from openmirror_nb._core.storage import local
from openmirror_nb._core.storage.local import LocalStorage
from openmirror_nb._core.table_names import FILE_NAME_BYTES, MAX_NAME_BYTES, RULE, identity, suggest

# (value, what the message says about it, the name it suggests)
REFUSED = [
    ("my table", "Table name 'my table' contains a space", "mytable"),
    ("Sales Header.G-L Entry", "Schema name 'Sales Header' contains a space", "SalesHeader.G-LEntry"),
    ("G/L Entry", "contains a path separator", "GLEntry"),
    ("a\\b", "contains a path separator", "ab"),
    ("a%20b", "Table name 'a%20b' contains '%'", "a20b"),
    ("50% off", "contains a space and '%'", "50off"),
    ("..", "contains '..'", "orders"),
    ("../x", "contains '..'", "x"),
    ("a.b.c", "Table name 'a.b.c' has more than one '.'", "a.b_c"),
    ("_x", "starts with '_' (the service ignores underscore items)", "x"),
    ("s._t", "Table name '_t' starts with '_'", "s.t"),
    ("-x", "does not start with a letter or digit", "x"),
    ("tab\tle", "contains a control character", "table"),
    ("bell\x07", "contains a control character", "bell"),
    ("", "is empty", "orders"),
    ("  ", "is empty", "orders"),
    (" lead", "has leading or trailing spaces", "lead"),
    ("x" * 300, "is 300 bytes in UTF-8", "x" * MAX_NAME_BYTES),
    ("ж" * 107, "is 214 bytes in UTF-8", "ж" * 106),
    ("s." + "x" * 211, "Table name", "s." + "x" * (MAX_NAME_BYTES - 2)),
    ("café!", "contains '!'", "café"),
    ("x\u200by", "contains '\\u200b'", "xy"),  # an invisible zero-width space
]


@pytest.mark.parametrize(("value", "says", "like"), REFUSED, ids=[repr(r[0])[:24] for r in REFUSED])
def test_a_refused_name_says_what_is_wrong_the_rule_and_a_name_that_works(value, says, like):
    with pytest.raises(InvalidNameError) as caught:
        TableRef.parse(value)
    message = str(caught.value)
    assert isinstance(caught.value, OpenMirrorError)
    assert "\n" not in message and message.strip() == message
    assert says in message, message
    assert RULE in message
    found = re.search(r"choose a name like ('(?:[^'\\]|\\.)*')", message)
    assert found and ast.literal_eval(found.group(1)) == like, message
    assert TableRef.parse(like) == TableRef.parse(suggest(value))  # the suggestion itself passes


def test_a_dot_separates_schema_and_table_and_the_error_says_so():
    with pytest.raises(InvalidNameError, match=r"one '\.' separates schema and table"):
        TableRef.parse("sales.orders.2024")
    assert TableRef.parse("x.schema").folder == "x.schema/schema"  # table "schema" in schema "x"


@pytest.mark.parametrize(
    ("value", "folder"),
    [
        ("GLEntry-17", "GLEntry-17"),
        ("12345", "12345"),
        ("Sales_Header", "Sales_Header"),
        ("naïve.ñandú", "naïve.schema/ñandú"),
        ("Δ.表", "Δ.schema/表"),
        ("हिन्दी", "हिन्दी"),  # combining marks after the first letter
        ("x" * MAX_NAME_BYTES, "x" * MAX_NAME_BYTES),
    ],
)
def test_names_that_work(value, folder):
    assert TableRef.parse(value).folder == folder


def test_names_are_nfc_normalised():
    decomposed = "nai\u0308ve.n\u0303andu\u0301"
    ref = TableRef.parse(decomposed)
    assert (ref.schema, ref.name) == ("naïve", "ñandú") and ref == TableRef.parse("naïve.ñandú")
    assert ref.folder.encode() == "naïve.schema/ñandú".encode()


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Sales.Orders", "sales.orders"),
        ("orders", "dbo.Orders"),  # a table at the root is in schema dbo
        ("Straße", "STRASSE"),
        ("Δ.表", "δ.表"),
        ("nai\u0308ve", "NAÏVE"),
    ],
)
def test_spellings_of_one_table_share_an_identity_and_a_lock(storage, a, b):
    first, second = TableFolder.of(storage, a), TableFolder.of(storage, b)
    assert first.ref.identity == second.ref.identity
    assert first.lock_name == second.lock_name
    assert TableRef.parse("sales.order").identity != TableRef.parse("sales.orders").identity


def test_locks_of_lowercase_tables_keep_their_names(storage):
    assert TableFolder.of(storage, "orders").lock_name == "orders"
    assert TableFolder.of(storage, "sales.orders").lock_name == "sales.orders"


def test_spellings_groups_folders_that_are_one_table():
    locs = [
        TableLocation("dbo", "orders", "orders", False),
        TableLocation("dbo", "Orders", "dbo.schema/Orders", True),
        TableLocation("sales", "x", "sales.schema/x", True),
    ]
    groups = spellings(locs)
    assert groups == {"orders": [locs[1]], "dbo.schema/Orders": [locs[0]]}
    assert identity("DBO", "Orders") == identity(None, "orders") == "dbo.orders"


@pytest.fixture
def storage(tmp_path):
    return LocalStorage(tmp_path / "lz", lock_dir=tmp_path / "locks")


def _longest_at_limit() -> str:
    """A ``schema.table`` of exactly MAX_NAME_BYTES bytes, multibyte, upper case in the schema."""
    name = "Ж" * 50 + "." + "ж" * 55 + "a"
    assert len(name.encode()) == MAX_NAME_BYTES
    return name


def test_the_byte_limit_fits_the_longest_file_name_built_from_a_name(tmp_path, storage, monkeypatch):
    """Every path component the toolkit builds from the longest allowed name, by the real
    builders on a real file system: none exceeds 255 bytes, and the longest is exactly 255 (so the
    limit is as generous as it can be)."""
    assert os.pathconf(tmp_path, "PC_NAME_MAX") == FILE_NAME_BYTES
    home = TableFolder.of(storage, _longest_at_limit())
    written: list[str] = []
    link = os.link

    def spy(src, dst, *args, **kwargs):
        written.extend([os.fspath(src), os.fspath(dst)])
        return link(src, dst, *args, **kwargs)

    monkeypatch.setattr(local.os, "link", spy)
    storage.write_bytes(home.metadata_path, b"{}")
    storage.write_bytes(reseed_path(home), b"{}", overwrite=False)  # its temp name is the longest
    storage.write_bytes(f"{home.staging('0' * 12, 'p' * 24)}/x.parquet", b"x")
    with home.lock(timeout=5):
        dropped = drop(home)  # the folder goes through the trash: <key>.<incarnation>.<nonce>
    assert dropped.existed and not storage.exists(home.folder)
    built = [
        *written,
        str(storage.lock_dir / f"{home.lock_name}.lock"),
        home.trash_path("0" * 12),
        home.legacy_journal_path,
    ]
    longest = max(len(part.encode()) for path in built for part in path.split("/"))
    assert longest == FILE_NAME_BYTES


def test_one_byte_more_is_refused_before_a_file_system_would(storage):
    over = _longest_at_limit() + "a"
    with pytest.raises(InvalidNameError, match=f"is {MAX_NAME_BYTES + 1} bytes in UTF-8"):
        TableRef.parse(over)
    home = TableFolder(storage, TableRef(over.split(".")[1], over.split(".")[0]))  # made by hand
    with pytest.raises(OSError, match="File name too long"):
        storage.write_bytes(reseed_path(home), b"{}")


def test_a_name_whose_case_folding_grows_is_measured_folded():
    grows = "\u0149" * 80  # 160 bytes; each folds to U+02BC U+006E, 3 bytes: 240
    with pytest.raises(InvalidNameError, match="bytes in UTF-8 \\(case-folded\\)"):
        TableRef.parse(grows)
