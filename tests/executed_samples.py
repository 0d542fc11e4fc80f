"""The sample notebooks as the test run executed them, kept for the documentation site.

``scripts/test`` runs every ``samples/*.ipynb`` with nbmake, and the site shows them with their
outputs; executing them a second time for the site doubled the time they cost CI. Loaded as a
pytest plugin (``-p tests.executed_samples --executed-samples DIR``), this writes each sample that
ran clean into ``DIR`` with its outputs, stamped with ``stamp()`` of the sources it ran from.
``scripts/docs`` renders such a copy only while its stamp still holds (``python -m
tests.executed_samples fresh SAMPLE COPY`` exits 0) and executes the sample otherwise.

The samples' Kafka cells run only when ``OPENMIRROR_KAFKA_BOOTSTRAP`` names a broker. Before nbmake
runs a sample whose source names it, this plugin starts one ``tests.kafka_broker.KafkaBroker`` for
the run (where ``missing()`` allows: else the cells say they need a broker), sets the variable,
``OPENMIRROR_KAFKA_TOPIC`` (a topic it makes: the broker makes none on its own) and, when unset,
``OPENMIRROR_SPARK_JARS`` (Spark's Kafka source, as tests/conftest.py sets it) for the notebook's
kernel, which inherits this process's environment, and ends the broker and the variables after the
last such sample. A variable already set is kept: a broker of your own runs the cells instead.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
KEY = "openmirror_executed_from"
KAFKA_ENV = "OPENMIRROR_KAFKA_BOOTSTRAP"
TOPIC_ENV = "OPENMIRROR_KAFKA_TOPIC"
# samples/07_streaming.ipynb's default topic: its Kafka cell writes there with Spark's Kafka writer
SAMPLE_TOPIC = "shop.sales.orders"


def stamp(sample: Path) -> str:
    """SHA-256 of the sample, of the files under ``samples/data`` (what samples read) and of every
    file of the package: a copy executed from other code or data is stale even if the notebook is
    the same."""
    digest = hashlib.sha256(sample.read_bytes())
    for folder in (ROOT / "samples" / "data", ROOT / "openmirror_nb"):
        for path in sorted(folder.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def fresh(sample: Path, copy: Path) -> bool:
    """``copy`` holds the outputs of ``sample`` executed from the sources as they are now."""
    try:
        return json.loads(copy.read_text(encoding="utf-8"))["metadata"][KEY] == stamp(sample)
    except (OSError, ValueError, KeyError):
        return False


def pytest_addoption(parser: Any) -> None:
    parser.addoption(
        "--executed-samples",
        metavar="DIR",
        help="write each samples/*.ipynb that nbmake ran clean into DIR, with its outputs",
    )


def pytest_configure(config: Any) -> None:
    folder = config.getoption("executed_samples")
    if not folder or not config.getoption("nbmake", False):
        return
    from nbmake.nb_run import NotebookRun  # nbmake's runner returns the executed notebook

    out = Path(folder).resolve()
    execute = NotebookRun.execute

    def execute_and_keep(run: Any) -> Any:
        sample = Path(run.filename).resolve()
        before = stamp(sample)  # the sources as the run starts
        result = execute(run)
        if result.error is None and sample.parent == ROOT / "samples":
            import nbformat

            result.nb.metadata[KEY] = before
            out.mkdir(parents=True, exist_ok=True)
            nbformat.write(result.nb, str(out / sample.name))
        return result

    NotebookRun.execute = execute_and_keep  # type: ignore[method-assign]


def _wants_kafka(item: Any) -> bool:
    """``item`` is nbmake's run of a sample whose cells read ``OPENMIRROR_KAFKA_BOOTSTRAP``."""
    path = Path(getattr(item, "path", ""))
    return (
        getattr(item, "nbmake", False)
        and path.suffix == ".ipynb"
        and path.resolve().parent == ROOT / "samples"
        and KAFKA_ENV in path.read_text(encoding="utf-8")
    )


class SampleBroker:
    """The run's broker for the samples' Kafka cells: started before the first sample that reads
    ``OPENMIRROR_KAFKA_BOOTSTRAP``, closed after the last one (or at the session's end)."""

    def __init__(self) -> None:
        self.broker: Any = None
        self.last: str | None = None  # the node id of the last sample that wants it
        self.set: dict[str, str | None] = {}  # the variables set here, with their values before
        self.told = False

    def start(self, config: Any) -> None:
        if self.broker is not None or self.set or os.environ.get(KAFKA_ENV):
            return  # running, or a broker of the caller's runs the cells
        from tests import kafka_broker, spark_packages

        why = kafka_broker.missing()
        if why:
            if not self.told:
                self.told = True
                reporter = config.pluginmanager.get_plugin("terminalreporter")
                if reporter is not None:
                    reporter.write_line(f"executed samples: their Kafka cells run without a broker: {why}")
            return
        broker = kafka_broker.KafkaBroker()
        try:
            broker.start()
            broker.create_topic(os.environ.get(TOPIC_ENV) or SAMPLE_TOPIC)
        except BaseException:
            broker.close()
            raise
        self.broker = broker
        values = {KAFKA_ENV: broker.bootstrap, TOPIC_ENV: os.environ.get(TOPIC_ENV) or SAMPLE_TOPIC}
        if "OPENMIRROR_SPARK_JARS" not in os.environ and spark_packages.fetched_for_this_line():
            jars = (str(spark_packages.jars(kind)) for kind in ("delta", "kafka"))
            values["OPENMIRROR_SPARK_JARS"] = os.pathsep.join(jars)
        for name, value in values.items():
            self.set[name] = os.environ.get(name)
            os.environ[name] = value

    def close(self) -> None:
        for name, before in self.set.items():
            if before is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = before
        self.set = {}
        broker, self.broker = self.broker, None
        if broker is not None:
            broker.close()


_BROKER = SampleBroker()


def pytest_collection_finish(session: Any) -> None:
    if session.config.getoption("nbmake", False):
        wanting = [item.nodeid for item in session.items if _wants_kafka(item)]
        _BROKER.last = wanting[-1] if wanting else None


def pytest_runtest_setup(item: Any) -> None:
    if _BROKER.last is not None and _wants_kafka(item):
        _BROKER.start(item.config)


def pytest_runtest_teardown(item: Any) -> None:
    if item.nodeid == _BROKER.last:
        _BROKER.close()


def pytest_sessionfinish(session: Any) -> None:
    _BROKER.close()


if __name__ == "__main__":  # python -m tests.executed_samples fresh SAMPLE COPY
    if len(sys.argv) != 4 or sys.argv[1] != "fresh":
        sys.exit("usage: python -m tests.executed_samples fresh SAMPLE COPY")
    sys.exit(0 if fresh(Path(sys.argv[2]), Path(sys.argv[3])) else 1)
