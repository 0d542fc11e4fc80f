"""The streaming query the kill tests run in a child process (``python -m
tests.streaming.stream_child DB FEED CHECKPOINT table|routed``), killed where
``OPENMIRROR_CRASH_AT`` says. Two files per micro-batch, each its own Spark partition, and
adaptive coalescing off: every batch publishes at least two files, so a kill can fall between
two renames, as with a larger feed (a small ``rows_per_file`` keeps the two parts from being
merged into one, as the parts of a feed this small would be; and, as in the suite, the feed is
shuffled by key rather than gathered into one task, which a feed this small would be:
``pipeline.feeds.changes.SMALL_FEED_BYTES``)."""

from __future__ import annotations

import sys

SCHEMA = "tbl string, id long, v string, n long, op int"
ROUTED_KEYS = {"a": ["id"], "b": ["id"]}


def stream(spark, feed: str):  # type: ignore[no-untyped-def]
    return spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 2).json(feed)


def sink_options(kind: str) -> dict[str, object]:
    if kind == "routed":
        # one table after the other, so a kill between two tables leaves the first with the batch
        routed = {"route": "tbl", "keys": ROUTED_KEYS, "parallel": 1}
        return {**routed, "op_column": "op", "rows_per_file": 4}
    return {"table": "t", "keys": ["id"], "op_column": "op", "rows_per_file": 4, "columns_drop": "tbl"}


def main(root: str, feed: str, checkpoint: str, kind: str) -> None:
    import openmirror_nb as om
    from openmirror_nb._core.pipeline.feeds import changes
    from openmirror_nb._core.runtime import get_spark

    changes.SMALL_FEED_BYTES = -1

    spark = get_spark()
    spark.conf.set("spark.sql.adaptive.coalescePartitions.enabled", "false")
    db = om.connect(root, lock_timeout=120)
    df = stream(spark, feed)
    options = sink_options(kind)
    if options.pop("columns_drop", None):
        df = df.drop("tbl")
    db.mirror_stream(df, checkpoint=checkpoint, **options).await_termination()  # type: ignore[arg-type]


if __name__ == "__main__":
    main(*sys.argv[1:])
