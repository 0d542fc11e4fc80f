"""Write a class-data-sharing archive of the JVM classes a Spark push loads: ``python -m
tests.spark_classes ARCHIVE`` (``scripts/test`` runs it once per environment).

The suite starts a hundred Spark drivers or more (the session, every killed child of the crash
and stream tests, every notebook's kernel), and most of a driver's start-up is loading Spark's
classes from its jars. A JVM started with ``-XX:SharedArchiveFile=ARCHIVE`` maps them from this
archive instead: on this 2-core machine a driver's first write comes 2-3x sooner. The archive
changes nothing but start-up; a JVM that cannot use it (another Spark, another Java) loads its
classes as before. Here a JVM started with ``-XX:ArchiveClassesAtExit`` runs a small push of each
kind, a stream and a mirror pass, so that the archive holds what the tests load, and writes it
when it exits. It is written beside its final name and renamed, so that no JVM maps half of one.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path


def workload(root: Path) -> None:
    import openmirror_nb as om

    spark = om.get_spark()
    db = om.connect(root / "db")
    rows = spark.range(200).selectExpr("id", "concat('v', id) AS v", "id * 1.5 AS n")
    db.push(rows, table="s.t", keys=["id"])  # initial load
    db.push(rows.where("id > 5"), table="s.t")  # snapshot diff
    feed = spark.createDataFrame([(1, "x", 0)], "id long, v string, __rowMarker__ int")
    db.push(feed, table="s.f", keys=["id"], mode="changes", convention="rowmarker")
    om.LocalMirror(root / "db").run_once()
    folder = root / "events"
    spark.createDataFrame([(1, "a", 0)], "id long, v string, op int").write.json(str(folder / "0"))
    stream = spark.readStream.schema("id long, v string, op int").json(str(folder / "0"))
    ms = db.mirror_stream(
        stream,
        table="s.e",
        keys=["id"],
        mode="changes",
        convention="rowmarker",
        op_column="op",
        checkpoint=str(root / "ckpt"),
        trigger="available_now",
    )
    ms.await_termination()
    db.status()
    spark.stop()


def main(archive: Path) -> None:
    if os.environ.get("OPENMIRROR_ARCHIVING") != "1":  # the parent: run the workload in a JVM that dumps
        import subprocess

        partial = archive.with_name(f"{archive.name}.{os.getpid()}.partial")  # two runs never share one
        env = {
            **os.environ,
            "OPENMIRROR_ARCHIVING": "1",
            "SPARK_SUBMIT_OPTS": f"{os.environ.get('SPARK_SUBMIT_OPTS', '')} -XX:ArchiveClassesAtExit={partial}"
            " -Xlog:cds=off -Xlog:cds+dynamic=off",
        }
        try:
            subprocess.run([sys.executable, "-m", "tests.spark_classes", str(archive)], env=env, check=True)
            if not partial.is_file():
                raise SystemExit(f"no class archive was written at {partial}")
            partial.replace(archive)
        finally:
            partial.unlink(missing_ok=True)
        return
    from pyspark import SparkContext

    with tempfile.TemporaryDirectory(prefix="spark-classes-") as tmp:
        workload(Path(tmp))
    # The JVM writes the archive as it exits, which it does when its standard input closes: wait
    # for it, so the parent finds the whole file.
    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None) if gateway is not None else None
    if proc is not None:
        proc.stdin.close()
        proc.wait(timeout=300)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
