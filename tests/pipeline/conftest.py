from __future__ import annotations

import pytest

import openmirror_nb as om


@pytest.fixture
def db(tmp_path):
    return om.connect(tmp_path / "db", lock_timeout=5)


@pytest.fixture
def lz(db):
    return db.target.landing_zone
