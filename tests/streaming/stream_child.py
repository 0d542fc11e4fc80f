"""The streaming query the kill tests run in a child process (``python -m
tests.streaming.stream_child DB FEED CHECKPOINT table|routed|kafka``), killed where
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
# The Kafka kind: topics <prefix>.s.a and <prefix>.s.b into tables s.a and s.b, one after the other,
# at most 24 messages a batch, each message a JSON row with its operation
KAFKA_SCHEMA = "id long, v string, n long, op int"


def kafka_options() -> dict[str, object]:
    return {
        "schemas": {"s.a": KAFKA_SCHEMA, "s.b": KAFKA_SCHEMA},
        "keys": {"s.a": ["id"], "s.b": ["id"]},
        "feed": __import__("openmirror_nb").FeedOptions(op_column="op"),
        "max_offsets_per_trigger": 24,
        "parallel": 1,
        "rows_per_file": 4,
    }


def kafka_source(bootstrap: str, prefix: str):  # type: ignore[no-untyped-def]
    import openmirror_nb as om

    return om.Kafka(bootstrap_servers=bootstrap, topics=[f"{prefix}.s.a", f"{prefix}.s.b"])


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
    if kind == "kafka":  # feed is "<bootstrap> <topic prefix>"
        bootstrap, prefix = feed.split()
        source = kafka_source(bootstrap, prefix)
        db.mirror_kafka(source, checkpoint=checkpoint, **kafka_options()).await_termination()  # type: ignore[arg-type]
        return
    df = stream(spark, feed)
    options = sink_options(kind)
    if options.pop("columns_drop", None):
        df = df.drop("tbl")
    db.mirror_stream(df, checkpoint=checkpoint, **options).await_termination()  # type: ignore[arg-type]


if __name__ == "__main__":
    main(*sys.argv[1:])
