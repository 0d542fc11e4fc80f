"""A saved plan is YAML a person edits: it loads back exactly (and saves again byte for byte),
takes hand edits with a new plan's defaults, and a file of the wrong shape is refused with one
line naming the value and the fix. No Spark: plans are built by hand here."""

from __future__ import annotations

import pytest
import yaml

import openmirror_nb as om

TABLES = [
    om.PlannedTable("order lines", "shop.orderlines", ("order_id", "line_no"), "primary_key", "snapshot",
                    None, True, True, 4, ()),
    om.PlannedTable("events", "shop.events", (), None, "append", "event_id", False, True, None, ()),
    om.PlannedTable("orders", "shop.orders", ("order_id",), "declared", "incremental", "updated_at", True,
                    False, 12_345_678, ("a 'quoted' problem: with a colon, # a hash and \"double\" quotes",)),
    om.PlannedTable("yes", "shop.yes", ("id",), "suggested", "snapshot", None, True, True, 0, ()),
    om.PlannedTable("2024", "shop.2024", ("Straße",), "unique", "delta_sync", None, True, True, None, ()),
]  # fmt: skip


def _plan(source=None, tables=None, problems=None):
    return om.SourcePlan(
        source or om.Catalog("lakehouse.shop"), "shop", tables or list(TABLES), problems or []
    )


@pytest.mark.parametrize(
    "source",
    [
        om.Catalog("lakehouse.shop"),
        om.DeltaFolder("abfss://ws@onelake.dfs.fabric.microsoft.com/lh/Tables"),
        om.Jdbc("jdbc:sqlserver://db:1433;databaseName=erp;encrypt=true", user="etl", schema="dbo",
                password_env="ERP_PASSWORD", properties={"loginTimeout": "30"}),
        om.Jdbc("jdbc:postgresql://db/erp", password_secret="https://erp-kv.vault.azure.net/secrets/erp-db"),
    ],
)  # fmt: skip
def test_a_plan_loads_back_exactly_and_saves_again_byte_for_byte(tmp_path, source):
    plan = _plan(source, problems=["601 tables: too many"])
    plan.save(tmp_path / "shop.yaml")
    loaded = om.load_plan(tmp_path / "shop.yaml")
    assert loaded == plan and loaded.tables == plan.tables and loaded.source.to_dict() == source.to_dict()
    loaded.save(tmp_path / "again.yaml")
    assert (tmp_path / "again.yaml").read_bytes() == (tmp_path / "shop.yaml").read_bytes()


def test_the_file_reads_as_a_person_edits_it(tmp_path):
    path = tmp_path / "shop.yaml"
    _plan().save(path)
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# An openmirror_nb source plan") and "key_origin: declared" in text
    assert "  keys: [order_id, line_no]\n" in text and "- source: order lines\n" in text
    # a person switches a table to incremental and adds one by its two required entries
    text = text.replace("  strategy: snapshot\n  watermark: null\n  detect_deletes: true\n  enabled: true\n  rows: 4",
                        "  strategy: incremental\n  watermark: updated_at\n  detect_deletes: false\n  enabled: true\n"
                        "  rows: 4", 1)  # fmt: skip
    text += "- source: returns\n  table: shop.returns\n"
    path.write_text(text, encoding="utf-8")
    loaded = om.load_plan(path)
    first = loaded.table("order lines")
    assert (first.strategy, first.watermark, first.detect_deletes) == ("incremental", "updated_at", False)
    assert loaded.table("returns") == om.PlannedTable(
        "returns", "shop.returns", (), None, "snapshot", None, True, True, None, ()
    )


def test_notes_load_back_and_a_plan_without_them_writes_none(tmp_path):
    """A plan written before notes existed (none in it) loads as it did; notes round-trip."""
    _plan().save(tmp_path / "plain.yaml")
    assert "\n  notes:" not in (tmp_path / "plain.yaml").read_text(encoding="utf-8")
    noted = om.PlannedTable("history", "shop.history", ("mtime",), "suggested", "snapshot", None, True, True,
                            11_970, (), notes=("keys [mtime] suggested from today's rows only: # see",))  # fmt: skip
    plan = _plan(tables=[*TABLES, noted])
    plan.save(tmp_path / "noted.yaml")
    text = (tmp_path / "noted.yaml").read_text(encoding="utf-8")
    assert "  problems: []\n  notes:\n  - 'keys [mtime] suggested from today''s rows only: # see'\n" in text
    loaded = om.load_plan(tmp_path / "noted.yaml")
    assert loaded.table("history").notes == noted.notes and loaded.tables == plan.tables
    (tmp_path / "noted.yaml").write_text(text.replace("  notes:\n  - '", "  notes: '"), encoding="utf-8")
    with pytest.raises(om.ConfigError, match="table 'history': notes is str, not a list"):
        om.load_plan(tmp_path / "noted.yaml")


def _edit(data, path, value):
    """``data`` with the entry at ``path`` (keys and list indexes) set, or removed for ``...``."""
    *parents, last = path
    for part in parents:
        data = data[part]
    if value is ...:
        del data[last]
    else:
        data[last] = value


BAD = [
    (("sources",), {}, ["unknown entry 'sources'", "Did you mean 'source'?"]),
    (("version",), 2, ["version 2 is not 1"]),
    (("source", "kind"), "jdbs", ["source kind 'jdbs' is not one of", "Did you mean 'jdbc'?"]),
    (("source", "databse"), "x", ["unknown entry 'databse'", "Did you mean 'database'?"]),
    (("target_schema",), "my shop", ["target_schema", "'my shop' contains a space", "like 'myshop'"]),
    (("tables",), {"orders": 1}, ["tables is dict, not a list"]),
    (("tables", 0, "strategy"), "apend", ["table 'order lines': strategy 'apend'", "Did you mean 'append'?"]),
    (("tables", 0, "key_origin"), "pk", ["key_origin 'pk' is not one of declared, primary_key"]),
    (("tables", 0, "key_origin"), None, ["keys ['order_id', 'line_no'] have no key_origin", "key_origin: declared"]),
    (("tables", 0, "keys"), [], ["key_origin 'primary_key' without keys"]),
    (("tables", 0, "keys"), ["id", "id"], ["repeat a column"]),
    (("tables", 0, "keys"), "order_id", ["keys is str, not a list"]),
    (("tables", 0, "table"), "shop.order lines", ["Table name 'order lines' contains a space", "shop.orderlines"]),
    (("tables", 0, "tabel"), "x", ["table 'order lines' has an unknown entry 'tabel'", "Did you mean 'table'?"]),
    (("tables", 0, "enabled"), "yes please", ["enabled 'yes please' is not true or false"]),
    (("tables", 0, "rows"), -1, ["rows -1 is not a count"]),
    (("tables", 0, "detect_deletes"), False, ["snapshot always mirrors deletes", "detect_deletes: true"]),
    (("tables", 1, "watermark"), None, ["table 'events': strategy append reads past a watermark", "watermark:"]),
    (("tables", 1, "detect_deletes"), True, ["append only inserts", "detect_deletes: false"]),
    (("tables", 2, "watermark"), None, ["strategy incremental reads past a watermark column"]),
    (("tables", 3, "source"), "orders", ["table 'orders' is listed twice"]),
    (("tables", 3, "source"), 7, ["table #4: source 7 is not a text"]),
    (("tables", 4, "table"), ...,  ["table '2024': table None is not a text"]),
]  # fmt: skip


@pytest.mark.parametrize(("path", "value", "words"), BAD, ids=[".".join(map(str, b[0])) for b in BAD])
def test_a_plan_file_of_the_wrong_shape_is_refused_in_one_line(tmp_path, path, value, words):
    file = tmp_path / "shop.yaml"
    _plan().save(file)
    data = yaml.safe_load(file.read_text(encoding="utf-8"))
    _edit(data, path, value)
    file.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    with pytest.raises(om.ConfigError) as caught:
        om.load_plan(file)
    text = str(caught.value)
    assert text.startswith(f"Plan file {file}: ") and "\n" not in text
    assert all(w in text for w in words), text


def test_a_missing_or_broken_file_is_said_so(tmp_path):
    with pytest.raises(om.ConfigError, match=r"shop.yaml: does not exist; save one with plan.save"):
        om.load_plan(tmp_path / "shop.yaml")
    (tmp_path / "shop.yaml").write_text("version: 1\ntables: [\n  - source: x\n", encoding="utf-8")
    with pytest.raises(om.ConfigError, match=r"is not valid YAML \(line 3: .*\); fix it"):
        om.load_plan(tmp_path / "shop.yaml")
    (tmp_path / "shop.yaml").write_text("- just a list\n", encoding="utf-8")
    with pytest.raises(om.ConfigError, match="the file is list, not a mapping"):
        om.load_plan(tmp_path / "shop.yaml")
