from __future__ import annotations

from pathlib import Path

import pytest

import openmirror_nb as om
from openmirror_nb._core.errors import ConfigError
from openmirror_nb._core.target import LocalTarget, OneLakeTarget, parse_target


def test_default_is_openmirror_db_in_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    target = parse_target(None)
    assert target == LocalTarget(tmp_path / "openmirror-db")


def test_path_file_url_and_landing_zone_path(tmp_path):
    assert parse_target(tmp_path / "db") == LocalTarget(tmp_path / "db")
    assert parse_target((tmp_path / "db").as_uri()) == LocalTarget(tmp_path / "db")
    assert parse_target(str(tmp_path / "db" / "Files" / "LandingZone")) == LocalTarget(tmp_path / "db")


def test_connect_creates_the_fabric_layout(tmp_path):
    db = om.connect(tmp_path / "db")
    for sub in ("Files/LandingZone", "Files/Monitoring", "Tables"):
        assert (tmp_path / "db" / sub).is_dir()
    assert repr(db) == f"MirroredDatabase({tmp_path / 'db'}, 0 tables)"


@pytest.mark.parametrize(
    "url",
    [
        "https://onelake.dfs.fabric.microsoft.com/ws-1/db-2/Files/LandingZone",
        "https://onelake.dfs.fabric.microsoft.com/ws-1/db-2/Files/LandingZone/",
        "abfss://ws-1@onelake.dfs.fabric.microsoft.com/db-2/Files/LandingZone",
    ],
)
def test_onelake_urls_parse(url):
    target = parse_target(url)
    assert target == OneLakeTarget(workspace="ws-1", item="db-2")
    assert target.https_url == "https://onelake.dfs.fabric.microsoft.com/ws-1/db-2/Files/LandingZone"
    assert target.abfss_url == "abfss://ws-1@onelake.dfs.fabric.microsoft.com/db-2/Files/LandingZone"


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/ws/db/Files/LandingZone",
        "https://onelake.dfs.fabric.microsoft.com/ws",
        "https://onelake.dfs.fabric.microsoft.com/ws/db/Files/LandingZone/sales.schema",
        "s3://bucket/x",
        "",
    ],
)
def test_bad_targets_name_the_value(url):
    with pytest.raises(ConfigError) as err:
        parse_target(url)
    assert "\n" not in str(err.value)
    if url:
        assert url in str(err.value)


def test_local_target_paths(tmp_path):
    t = LocalTarget(Path(tmp_path))
    assert t.landing_zone == tmp_path / "Files" / "LandingZone"
    assert t.monitoring == tmp_path / "Files" / "Monitoring"
    assert t.tables == tmp_path / "Tables"
