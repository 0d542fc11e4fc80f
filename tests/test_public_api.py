"""What a notebook sees: the calls that replaced internal paths (``db.scan``), the old paths that
still work with a warning, and the root exporting every name it lists."""

from __future__ import annotations

import warnings

import pytest

import openmirror_nb as om
from openmirror_nb._core.landing_zone import TableFolder
from openmirror_nb._core.landing_zone.table_scan import scan
from tests.test_table_scan import parquet, push, seq


def test_db_scan_lists_one_table_folder_and_what_blocks_it(tmp_path):
    db = om.connect(tmp_path / "db")
    home = TableFolder.of(db.storage, "sales.orders")
    push(home, [parquet(1, 2)], push_id="p1")
    db.storage.write_bytes(f"{home.folder}/{seq(3)}", parquet(3))  # 2 is missing: a gap
    found = db.scan("sales.orders")
    assert isinstance(found, om.TableScan) and found == scan(db.storage, "sales.orders")
    assert [b.kind for b in found.blockers] == ["gap"] and isinstance(found.blockers[0], om.Blocker)
    assert [f.name for f in found.pending] == [seq(1), seq(3)] and found.last_sequence == 3


def test_every_name_the_root_lists_is_there():
    missing = [name for name in om.__all__ if not hasattr(om, name)]
    assert missing == []
    assert set(om.__all__) <= set(dir(om))


@pytest.mark.parametrize(
    ("path", "name", "instead"),
    [("landing_zone", "scan", "db.scan(table)"), ("fabric", "get_mirroring_status", "db.status()")],
)
def test_a_path_the_readme_documented_still_works_and_names_the_call_that_replaced_it(path, name, instead):
    module = __import__(f"openmirror_nb.{path}", fromlist=[name])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert callable(getattr(module, name))
    assert [(w.category, instead in str(w.message)) for w in caught] == [(DeprecationWarning, True)]
