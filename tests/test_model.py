from __future__ import annotations

import pytest

from openmirror_nb._core.errors import ConfigError, InvalidNameError, OpenMirrorError
from openmirror_nb._core.model import PushResult, TableOptions, TableRef
from openmirror_nb._core.table_names import check_name


def test_table_ref_forms():
    assert TableRef.parse("orders").folder == "orders"
    ref = TableRef.parse("sales.orders")
    assert (ref.schema, ref.name, ref.folder, str(ref)) == (
        "sales",
        "orders",
        "sales.schema/orders",
        "sales.orders",
    )
    assert TableRef.parse("GLEntry-17").folder == "GLEntry-17"  # hyphens and digits work in Fabric


@pytest.mark.parametrize(
    "bad",
    ["", "  ", "_x", "a/b", "a\\b", "..", "a..b", "sales._orders", "_s.orders", "tab\tle", " lead"],
)
def test_invalid_table_names_are_rejected(bad):
    with pytest.raises(InvalidNameError) as err:
        TableRef.parse(bad)
    message = str(err.value)
    assert "name" in message and "\n" not in message
    assert "choose a name like" in message or "is not a string" in message


def test_schema_suffix_is_reserved():
    with pytest.raises(InvalidNameError, match="schema folder"):
        check_name("orders.schema", what="Table")


def test_table_options_validation():
    with pytest.raises(ConfigError, match="xlsx"):
        TableOptions(file_format="xlsx")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="Sometimes"):
        TableOptions(file_detection="Sometimes")  # type: ignore[arg-type]
    assert TableOptions(file_format="tsv").column_separator == "\t"
    assert TableOptions(file_format="psv").column_separator == "|"


def test_push_result_reprs():
    r = PushResult("sales.orders", "changes", (4, 5), {"insert": 2, "delete": 1}, 2048, 1.25, ("a", "b"))
    assert repr(r) == "PushResult(sales.orders: files 4..5; insert 2, delete 1; 2,048 bytes in 1.2 s)"
    assert "<b>Pushed sales.orders</b>" in r._repr_html_() and "4, 5" in r._repr_html_()
    assert r.total_rows == 3
    empty = PushResult("t", "changes", (), {}, 0, 0.1)
    assert "no files" in repr(empty)


def test_errors_render_one_line():
    err = InvalidNameError("Table name '_x' starts with '_'")
    assert isinstance(err, OpenMirrorError)
    assert err._render_traceback_() == ["InvalidNameError: Table name '_x' starts with '_'"]
