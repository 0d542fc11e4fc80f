from __future__ import annotations

import pytest

import openmirror_nb as om


@pytest.fixture
def db(tmp_path):
    return om.connect(tmp_path / "db", lock_timeout=5)


@pytest.fixture
def lz(db):
    return db.target.landing_zone


@pytest.fixture(params=["spark", "deltalake"])
def reader(request, spark):
    """Each Delta reader ``db.sync_delta`` has: Spark's own (the suite's session has Delta, as a
    Fabric session does) and ``deltalake``'s log with Spark reading the files."""
    from openmirror_nb._core.pipeline.delta.source import spark_has_delta

    if request.param == "spark" and not spark_has_delta(spark):
        pytest.skip("this Spark line has no Delta jars (Maven Central serves none for it)")
    return request.param
