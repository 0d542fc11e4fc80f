"""The job notebooks (``notebooks/``) as a Fabric pipeline's Notebook activity runs them: with base
parameters, injected in a cell after the parameters cell, and a Delta table as ``SOURCE``. nbmake
runs them with their offline defaults (``scripts/test``), which never reach the cells that read a
path with ``spark.read.format("delta")``; here those cells run, on a table Spark's Delta writer
made. The notebooks share one kernel, as a high-concurrency session shares one in Fabric: the
first starts its session, with Delta as Fabric's has it (it inherits ``OPENMIRROR_SPARK_JARS``
from this process, tests/conftest.py), and each starts from an empty namespace."""

from __future__ import annotations

import uuid
from pathlib import Path

import nbformat
import pyarrow as pa
import pytest
from deltalake import DeltaTable
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

import openmirror_nb as om
from tests import spark_packages
from tests.pipeline.delta_tables import ordered

pytestmark = pytest.mark.spark
NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
SAMPLES = NOTEBOOKS.parent / "samples"
COLUMNS = ("order_id", "quantity", "status")


@pytest.fixture
def delta_spark(spark):
    from openmirror_nb._core.pipeline.delta.source import spark_has_delta

    if not spark_packages.fetched_for_this_line():
        pytest.skip("this Spark line has no Delta jars (Maven Central serves none for it)")
    assert spark_has_delta(spark), "the session should have Delta's extension (OPENMIRROR_SPARK_JARS)"
    return spark


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    """One Python kernel for the module's notebooks (each JVM start is most of a job's time)."""
    manager = KernelManager(kernel_name="python3")
    manager.start_kernel(cwd=str(tmp_path_factory.mktemp("kernel")))
    yield manager
    manager.shutdown_kernel(now=True)


def run_job(kernel: KernelManager, name: str, **parameters: object) -> str:
    """Run ``notebooks/<name>.ipynb`` with ``parameters`` after its parameters cell, as a pipeline
    does, in ``kernel`` with its namespace emptied first; returns what its cells printed. A cell
    that raises fails the test with its traceback."""
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
    given = "\n".join(f"{key} = {value!r}" for key, value in parameters.items())
    nb.cells.insert(at + 1, nbformat.v4.new_code_cell(given, metadata={"tags": ["injected-parameters"]}))
    nb.cells.insert(0, nbformat.v4.new_code_cell("%reset -f"))
    NotebookClient(nb, km=kernel, timeout=600).execute()
    return "".join(
        out.get("text", "")
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
    )


def _orders(spark, rows, quantity: str = "bigint"):
    return spark.createDataFrame(rows, f"order_id long, quantity {quantity}, status string")


def _mirrored(db_path: Path, columns: tuple[str, ...] = COLUMNS) -> list[tuple]:
    table = DeltaTable(str(db_path / "Tables" / "sales" / "orders")).to_pyarrow_table()
    return ordered(tuple(r[c] for c in columns) for r in table.to_pylist())


def _quantity_type(db_path: Path) -> pa.DataType:
    return (
        DeltaTable(str(db_path / "Tables" / "sales" / "orders"))
        .to_pyarrow_table()
        .schema.field("quantity")
        .type
    )


def _source(spark, path: Path, columns: tuple[str, ...] = COLUMNS) -> list[tuple]:
    return ordered(tuple(r[c] for c in columns) for r in spark.read.format("delta").load(str(path)).collect())


def test_mirror_table_reads_a_delta_path_with_spark_and_mirrors_it(delta_spark, kernel, tmp_path):
    source = tmp_path / "lakehouse" / "Tables" / "orders"
    _orders(delta_spark, [(i, i % 3, "new") for i in range(50)]).write.format("delta").save(str(source))
    delta_spark.sql(f"UPDATE delta.`{source}` SET status = 'paid' WHERE order_id < 10")  # version 1
    printed = run_job(
        kernel, "mirror_table", TARGET=str(tmp_path / "db"), SOURCE=str(source), TABLE="sales.orders",
        KEYS="order_id",
    )  # fmt: skip
    assert "ok: PushResult(sales.orders: file 1; initial 50;" in printed, printed
    assert _mirrored(tmp_path / "db") == _source(delta_spark, source)
    assert sum(1 for row in _mirrored(tmp_path / "db") if row[2] == "paid") == 10  # version 1, not 0


def test_reseed_table_reloads_a_delta_path_after_a_type_change(delta_spark, kernel, tmp_path):
    db_path = tmp_path / "db"
    rows = [(i, i % 5, "new") for i in range(40)]
    om.connect(db_path).push(_orders(delta_spark, rows, "int"), table="sales.orders", keys=["order_id"])
    om.LocalMirror(db_path).run_once()
    assert _quantity_type(db_path) == pa.int32()
    source = tmp_path / "lakehouse" / "Tables" / "orders"  # quantity is a bigint now: a type change
    _orders(delta_spark, rows).write.format("delta").save(str(source))
    printed = run_job(
        kernel, "reseed_table", TARGET=str(db_path), SOURCE=str(source), TABLE="sales.orders",
        CONFIRM="sales.orders", TIMEOUT_SECONDS=300,
    )  # fmt: skip
    assert "ok: " in printed, printed  # its check cell found the reload verified
    assert _quantity_type(db_path) == pa.int64()
    assert _mirrored(db_path) == _source(delta_spark, source)


def test_sync_delta_follows_the_feed_of_a_table_spark_wrote(delta_spark, kernel, tmp_path):
    source = tmp_path / "lakehouse" / "Tables" / "orders"
    first = [(i, 1, "new") for i in range(30)]
    _orders(delta_spark, first).write.format("delta").option("delta.enableChangeDataFeed", "true").save(
        str(source)
    )
    db = om.connect(tmp_path / "db")
    assert db.sync_delta(str(source), table="sales.orders", keys=["order_id"]).reader == "spark"
    delta_spark.sql(f"UPDATE delta.`{source}` SET status = 'paid' WHERE order_id < 5")  # version 1
    delta_spark.sql(f"DELETE FROM delta.`{source}` WHERE order_id >= 28")  # version 2
    _orders(delta_spark, [(100, 2, "new")]).write.format("delta").mode("append").save(str(source))  # 3
    printed = run_job(
        kernel, "sync_delta", TARGET=str(tmp_path / "db"), SOURCE=str(source), TABLE="sales.orders",
        KEYS="order_id", FAIL_ON_FALLBACK=True,
    )  # fmt: skip
    assert "the mirrored table equals the source" in printed, printed
    assert "at source version 0 -> 3, changes by spark" in printed, printed
    assert _mirrored(tmp_path / "db") == _source(delta_spark, source)


def test_mirror_stream_mirrors_a_kafka_topic_with_db_mirror_kafka(spark, kafka, kernel, tmp_path):
    """FORMAT "kafka": the notebook's default SCHEMA, KEYS, OP_COLUMN and ORDER_BY over a real
    3-partition topic; two scheduled runs, the second taking only the messages sent since."""
    import json

    topic = f"job{uuid.uuid4().hex[:8]}.orders"
    kafka.create_topic(topic, partitions=3)

    def send(rows):
        kafka.produce(topic, [(str(r["id"]), json.dumps(r), r["id"] % 3) for r in rows])

    send([{"id": i, "customer": f"c{i}", "total": i * 1.5, "op": 0, "seq": i} for i in range(1, 9)])
    db_path = tmp_path / "db"
    params = dict(FORMAT="kafka", SOURCE=kafka.bootstrap, TOPIC=topic, TARGET=str(db_path),
                  CHECKPOINT=str(tmp_path / "ckpt"))  # fmt: skip
    printed = run_job(kernel, "mirror_stream", **params)
    assert "ok" in printed and "sales.orders" in printed, printed
    send(
        [
            {"id": 2, "customer": "changed", "total": 0.0, "op": 4, "seq": 20},
            {"id": 5, "op": 2, "seq": 30},
            {"id": 3, "customer": "first", "total": 1.0, "op": 4, "seq": 40},
            {"id": 3, "customer": "older", "total": 2.0, "op": 4, "seq": 35},  # seq orders a key's changes
        ]
    )
    printed = run_job(kernel, "mirror_stream", **params)
    assert "ok" in printed, printed
    om.LocalMirror(db_path).run_once()
    got = om.connect(db_path).read_table("sales.orders", as_pandas=True).sort_values("id")
    expected = {i: (f"c{i}", i * 1.5) for i in range(1, 9) if i != 5} | {
        2: ("changed", 0.0),
        3: ("first", 1.0),
    }
    assert {r.id: (r.customer, r.total) for r in got.itertuples()} == expected
