"""Property: after any sequence of snapshot and change pushes, the mirrored table is what was pushed.

Random sequences run through the real push path and the local mirror; the expected table is a
plain dict kept by the test (snapshot = replace everything; markers applied row by row).
"""

from __future__ import annotations

import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import openmirror_nb as om

pytestmark = [pytest.mark.spark, pytest.mark.slow]

KEYS = st.integers(min_value=0, max_value=4)  # few keys: steps keep touching the same rows
VALUES = st.one_of(st.none(), st.sampled_from(["a", "b", "", "ü,x"]))
SNAPSHOT = st.dictionaries(KEYS, VALUES, max_size=5).map(lambda d: ("snapshot", d))
CHANGE = st.tuples(KEYS, st.sampled_from([0, 1, 2, 4]), VALUES)
CHANGES = st.lists(CHANGE, min_size=1, max_size=10).map(lambda c: ("changes", c))
STEPS = st.lists(st.one_of(SNAPSHOT, CHANGES), min_size=2, max_size=4)


def _apply(expected: dict, changes: list) -> list:
    """Apply a change batch to the model; marker 0 only for absent keys (duplicates are Fabric's,
    not ours to model). Returns the rows actually sent."""
    sent = []
    for key, op, value in changes:
        if op == 0 and key in expected:
            op = 4
        sent.append((key, value if op != 2 else None, op))
        if op == 2:
            expected.pop(key, None)
        else:
            expected[key] = value
    return sent


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=STEPS)
def test_mirrored_table_equals_what_was_pushed(spark, steps):
    db = om.connect(tempfile.mkdtemp(prefix="om-prop-"))
    expected: dict = {}
    for kind, payload in steps:
        if kind == "snapshot":
            expected = dict(payload)
            df = spark.createDataFrame(sorted(payload.items()), "id long, v string")
            db.push(df, table="p.t", keys=["id"])
        else:
            sent = _apply(expected, payload)
            df = spark.createDataFrame(sent, "id long, v string, op int").coalesce(1)
            db.push(df, table="p.t", keys=["id"], mode="changes", op_column="op")
    om.LocalMirror(db.target.root).run_once()
    mirrored = db.read_table("p.t", as_pandas=True)
    got = sorted((int(r.id), None if r.v is None or r.v != r.v else r.v) for r in mirrored.itertuples())
    assert got == sorted(expected.items())
