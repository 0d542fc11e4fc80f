"""Observed metrics are read with a bounded wait: a job whose counts never come raises one line
naming them (the hang of a push on Spark 4.3 was such a wait), and the bound is the session's
``spark.openmirror.metricsTimeout``."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.spark


@pytest.fixture
def short_timeout(spark):
    spark.conf.set("spark.openmirror.metricsTimeout", "0.3")
    yield
    spark.conf.unset("spark.openmirror.metricsTimeout")


def test_counts_that_never_come_raise_one_line_naming_them(spark, short_timeout):
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    import openmirror_nb as om
    from openmirror_nb._core.pipeline.push import observed

    observation = Observation()
    spark.range(3).observe(observation, F.count(F.lit(1)).alias("rows"))  # never run
    with pytest.raises(om.MetricsTimeoutError) as caught:
        observed.counts(observation, spark=spark, what="the row counts of 'sales.orders'")
    message = str(caught.value)
    assert "\n" not in message
    assert "the row counts of 'sales.orders'" in message
    assert "within 0.3 s" in message and "spark.openmirror.metricsTimeout" in message


def test_counts_of_a_job_that_ran_are_read_within_the_bound(spark, short_timeout):
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    from openmirror_nb._core.pipeline.push import observed

    observation = Observation()
    spark.range(7).observe(observation, F.count(F.lit(1)).alias("rows")).write.format("noop").mode(
        "overwrite"
    ).save()
    assert observed.counts(observation, spark=spark, what="x") == {"rows": 7}


def test_an_observation_never_attached_is_refused_at_once(spark):
    from pyspark.sql import Observation

    import openmirror_nb as om
    from openmirror_nb._core.pipeline.push import observed

    with pytest.raises(om.MetricsTimeoutError, match="never ran the job that counts the test's counts"):
        observed.counts(Observation(), spark=spark, what="the test's counts")


@pytest.mark.parametrize("value", ["0", "-1", "soon", "1 minute"])
def test_a_bad_timeout_names_the_value_and_the_fix(spark, value):
    import openmirror_nb as om
    from openmirror_nb._core.pipeline.push import observed

    spark.conf.set("spark.openmirror.metricsTimeout", value)
    try:
        with pytest.raises(om.ConfigError) as caught:
            observed.timeout_of(spark)
    finally:
        spark.conf.unset("spark.openmirror.metricsTimeout")
    assert repr(value) in str(caught.value) and "spark.conf.set" in str(caught.value)


def test_the_timeout_is_read_from_the_session(spark):
    from openmirror_nb._core.pipeline.push import observed

    assert observed.timeout_of(spark) == observed.DEFAULT_TIMEOUT == 60.0
    spark.conf.set("spark.openmirror.metricsTimeout", "120s")
    try:
        assert observed.timeout_of(spark) == 120.0
    finally:
        spark.conf.unset("spark.openmirror.metricsTimeout")
