"""A JSON-row topic's messages as its table's rows: each value parsed as JSON of the table's
declared columns, with the Kafka position that orders a key's changes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from openmirror_nb._core.identifiers import quoted
from openmirror_nb._core.model import ROW_MARKER, RowMarker
from openmirror_nb._core.pipeline.push.request import PushRequest
from openmirror_nb._core.streaming.topics import OFFSET, PARTITION, POSITION, TopicTable

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

UNPARSED = "_openmirror_unparsed"  # from_json's corrupt-record column


def parsed_value(route: TopicTable) -> Column:
    """The message's value as a struct of its table's columns and ``UNPARSED`` (the value
    itself, where it is not such JSON), for the messages of ``route``'s topic; NULL for others."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    assert route.schema is not None  # only a topic with a DDL is parsed as rows
    schema = StructType([*route.schema.fields, StructField(UNPARSED, StringType())])
    options = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": UNPARSED}
    parsed = F.from_json(F.col("value").cast("string"), schema, options)
    return F.when(F.col("topic") == route.topic, parsed)


def table_rows(parsed: DataFrame, i: int, route: TopicTable, keys: tuple[str, ...] | None) -> DataFrame:
    """The table's rows of the batch (``parsed``'s column ``_p<i>``): its columns, with the Kafka
    position that orders them and, for messages without an operation, the marker of an upsert.
    As text expressions, in one call to the JVM: a column built field by field costs a call
    per field and table, a second per batch on this machine."""
    from pyspark.sql import functions as F

    assert route.schema is not None  # only a topic with a DDL is parsed as rows
    columns = [f"`_p{i}`.{quoted(f.name)} AS {quoted(f.name)}" for f in route.schema.fields]
    extra = [f"partition AS {quoted(PARTITION)}", f"offset AS {quoted(OFFSET)}"]
    if route.feed is None and keys is not None:
        extra.append(f"{int(RowMarker.UPSERT)} AS {quoted(ROW_MARKER)}")
    elif route.feed is None or route.feed.convention == "debezium":
        # a keyless table's inserts have no order it could show; a Debezium feed is ordered by
        # its own source position, and publishes no extra column
        extra = []
    return parsed.where(F.col("topic") == route.topic).selectExpr(*columns, *extra)


def request_of(base: PushRequest, route: TopicTable, keys: tuple[str, ...] | None) -> PushRequest:
    from dataclasses import replace

    if route.feed is None and keys is None:
        return replace(base, table=route.table, keys=None, mode="snapshot", append=True)
    hidden = () if route.feed is not None and route.feed.convention == "debezium" else POSITION
    return replace(base, table=route.table, keys=route.keys, feed=route.ordered_feed, unpublished=hidden)
