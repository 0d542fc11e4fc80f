"""The PostgreSQL server's clock against this machine's, over JDBC (``pg_clock``): a server started
under libfaketime 300 s ahead is measured 300 s ahead, the session's own server about level, each
within the measure's ± bound; a measure that fails leaves the skew unknown, never 0."""

from __future__ import annotations

import glob
import logging

import pytest

import openmirror_nb as om
from openmirror_nb._core.api.live_watch import SourceWatch
from openmirror_nb._core.errors import ConfigError
from openmirror_nb._core.sources.pg_clock import measure_source
from tests.sources.postgres import PASSWORD, SUPERUSER, missing, start_server

FAKETIME = sorted(glob.glob("/usr/lib/*/faketime/libfaketime.so.1"))
pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(missing() is not None, reason=str(missing())),
    pytest.mark.skipif(not FAKETIME, reason="libfaketime is not installed (scripts/setup-env installs it)"),
]
AHEAD = 300.0
ENV = "CLOCK_PG_PASSWORD"


@pytest.fixture(scope="module")
def ahead(spark):
    """A server whose clock is ``AHEAD`` seconds ahead of this machine's. Spark's JVM started
    before (the ``spark`` fixture), so only the server's processes load libfaketime."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LD_PRELOAD", FAKETIME[0])
        mp.setenv("FAKETIME", f"+{AHEAD:.0f}")
        mp.setenv("FAKETIME_DONT_FAKE_MONOTONIC", "1")  # pg_ctl's waits and timeouts stay true
        server = start_server()
    try:
        yield server
    finally:
        server.stop()


def _source(url: str, monkeypatch) -> om.Jdbc:
    monkeypatch.setenv(ENV, PASSWORD)
    return om.Jdbc(url, user=SUPERUSER, password_env=ENV)


def test_a_server_clock_ahead_is_measured_ahead_within_its_bound(spark, ahead, postgres, monkeypatch):
    retained, shifted = measure_source(spark, _source(ahead.url, monkeypatch), "no_such_slot")
    assert retained is None and shifted is not None  # no slot: no WAL figure, the clock still
    assert 0 <= shifted.error < 0.5, shifted
    assert abs(shifted.skew - AHEAD) <= shifted.error + 1, shifted

    _, level = measure_source(spark, _source(postgres.url, monkeypatch), "no_such_slot")
    assert level is not None and abs(level.skew) <= level.error + 1, level


def test_a_failed_measure_makes_the_skew_unknown_not_zero(spark, ahead, monkeypatch, caplog):
    source = _source(ahead.url, monkeypatch)
    watch = SourceWatch(lambda: measure_source(spark, source, "no_such_slot"), "no_such_slot")
    assert watch.take() is None and watch.clock.measured is not None

    closed = _source(ahead.url.replace(f":{ahead.port}/", ":1/"), monkeypatch)
    with pytest.raises(ConfigError) as refused:
        measure_source(spark, closed, "no_such_slot")
    assert PASSWORD not in str(refused.value)
    watch.measure = lambda: measure_source(spark, closed, "no_such_slot")
    with caplog.at_level(logging.WARNING, logger="openmirror_nb"):
        assert watch.take() is None
    assert watch.clock.measured is None  # unknown: the stream's pushes carry no skew
    assert "Could not measure" in caplog.text and PASSWORD not in caplog.text
