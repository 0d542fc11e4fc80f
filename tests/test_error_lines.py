"""Every exception said in one line is said by ``errors.user_line``: one line, its secrets scrubbed
(the line's prefix too), a JVM error as its Java exception rather than py4j's stack, and a source's
own secrets hidden before the line is cut. The places that used to say it their own way say it so."""

from __future__ import annotations

import pandas as pd
import pytest

import openmirror_nb as om
from openmirror_nb._core.errors import LINE_LIMIT, ConfigError, user_line
from openmirror_nb._core.pipeline.inputs.arrow_input import _conversion_error
from openmirror_nb._core.sources.run_table import one_line

JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"
PASSWORD = "Tr0ub4dor-and-3"


class _JavaClass:
    def getSimpleName(self):
        return "SQLException"


class _JavaException:
    def __init__(self, message, cause=None):
        self.message, self.cause = message, cause

    def getClass(self):
        return _JavaClass()

    def getMessage(self):
        return self.message

    def getCause(self):
        return self.cause


class Py4JLike(Exception):
    """What py4j raises for a Java exception: its text is the call and the whole Java stack."""

    def __init__(self, java):
        super().__init__(
            "An error occurred while calling o42.jdbc.\n: java.sql.SQLException: ...\n\tat x.y(Z)"
        )
        self.java_exception = java


class _DeadGateway:
    def getClass(self):
        raise ConnectionError("the gateway is gone")


def test_a_jvm_error_is_its_java_exception_not_the_stack():
    assert user_line(Py4JLike(_JavaException("No suitable driver\n  for jdbc:x"))) == (
        "SQLException: No suitable driver for jdbc:x"
    )
    assert user_line(Py4JLike(_JavaException(None))) == "SQLException"
    dead = user_line(Py4JLike(_DeadGateway()))  # py4j's own text, folded, is what is left
    assert (
        dead.startswith("Py4JLike: An error occurred while calling o42.jdbc. : java.sql") and "\n" not in dead
    )


def test_a_refusal_raised_in_a_spark_job_is_its_own_line_wherever_spark_wraps_it():
    refusal = (
        "[openmirror] Table t column 'n' holds NaN, which decimal(10,2) does not hold; declare n: string"
    )
    line = "Table t column 'n' holds NaN, which decimal(10,2) does not hold; declare n: string"
    # Spark 3.5: the refusal is the cause of the cause, under a message holding its trace
    trace = f"Job aborted: ... java.lang.RuntimeException: {refusal}\n\tat org.apache.Foo.bar(Foo.scala:1) ... 9 more"
    chained = _JavaException(
        trace, _JavaException("[TASK_WRITE_FAILED] Task failed", _JavaException(refusal))
    )
    assert user_line(Py4JLike(chained)) == line
    # Spark 4: Spark's own class tag and SQL state around it, in the text alone
    assert user_line(RuntimeError(f"[USER_RAISED_EXCEPTION] {refusal} SQLSTATE: P0001")) == line
    assert user_line(Py4JLike(_JavaException(trace))) == line  # the trace after it is cut off


def test_the_whole_line_is_scrubbed_the_prefix_too():
    line = user_line(ValueError(f"Bearer {JWT}"), f"GET https://api/x?sig=s3cr3t&{JWT} failed")
    assert JWT not in line and "s3cr3t" not in line and line.endswith("ValueError: ***")
    assert JWT not in user_line(Py4JLike(_JavaException(f"token {JWT}")))


def test_a_secret_the_caller_hides_is_hidden_before_the_cut():
    text = "x" * (LINE_LIMIT - 20) + PASSWORD * 3  # the cut falls inside the password
    line = user_line(RuntimeError(text), hide=lambda t: t.replace(PASSWORD, "***"))
    assert "Tr0" not in line and line.endswith("*" * 9)


def test_a_jdbc_source_line_hides_its_password():
    source = om.Jdbc("jdbc:postgresql://db:5432/erp", user="etl", password=PASSWORD)
    error = Py4JLike(_JavaException(f"FATAL: password authentication failed ({PASSWORD})"))
    assert one_line(source, error) == "SQLException: FATAL: password authentication failed (***)"
    assert PASSWORD not in one_line(source, RuntimeError(f"x{PASSWORD}\ny"))


def test_pyarrow_refusing_a_frame_is_one_scrubbed_line():
    error = _conversion_error(pd.DataFrame({"a": [1]}), ValueError(f"Authorization: Bearer {JWT}\nmore"))
    assert isinstance(error, om.UnsupportedTypeError) and JWT not in str(error) and "\n" not in str(error)
    assert str(error).startswith("pyarrow cannot read the pandas DataFrame (ValueError: Authorization")


def test_spark_rejecting_a_cell_is_one_scrubbed_line(monkeypatch):
    from pyspark.errors import PySparkException

    from openmirror_nb._core.magics.commands import _cell_frame

    class Session:
        def sql(self, text):
            raise PySparkException(message=f"[PARSE_SYNTAX_ERROR] near 'SELEC'.\n== SQL ==\n{text}\n^^^")

    monkeypatch.setattr(om, "get_spark", lambda: Session())
    with pytest.raises(ConfigError) as caught:
        _cell_frame(f"SELEC * FROM t WHERE url = 'jdbc:x://u:{PASSWORD}@h'")
    message = str(caught.value)
    assert message.startswith("Spark rejected the cell's SQL: PySparkException: [PARSE_SYNTAX_ERROR]")
    assert PASSWORD not in message and "\n" not in message
