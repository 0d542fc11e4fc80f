"""What the mirror says when Spark's Kafka source cannot go on, and what it takes as a Kafka
stream: each in one line with the fix."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from openmirror_nb._core.errors import ConfigError, SourceError, user_line
from openmirror_nb._core.streaming.topics import KAFKA_COLUMNS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def check_kafka_frame(df: DataFrame) -> None:
    """Refuse a DataFrame that is not Spark's Kafka source (its columns say so)."""
    missing = [c for c in KAFKA_COLUMNS if c not in df.columns]
    if missing or not getattr(df, "isStreaming", False):
        raise ConfigError(
            "db.mirror_kafka takes om.Kafka(...), om.EventHubs(...) or a streaming DataFrame of Spark's "
            "Kafka source (spark.readStream.format('kafka')); this one lacks "
            f"{', '.join(missing) or 'a stream'}."
        )


def kafka_failure(exc: BaseException, where: str = "Kafka") -> SourceError | None:
    """One line for a query Spark's Kafka source stopped: offsets its checkpoint needs gone from a
    topic (``failOnDataLoss``), or credentials the broker refused; ``None`` for other failures."""
    text = str(exc)  # whole: Spark's wrappers put the Kafka reason past a line's length
    if "KAFKA_DATA_LOSS" in text or "data may have been lost" in text.lower():
        # Spark 4: "Reason: Could not read records in offset [3, 9) for topic partition t-0 with ...";
        # Spark 3.5: "Cannot fetch offset 3 (GroupId: ..., TopicPartition: t-0)."
        reason = re.search(r"Reason: (.+?)(?:\s+with consumer group|\n\s*at |\.?\s*$)", text, re.S)
        fetch = re.search(r"Cannot fetch offset (\d+) \(GroupId: [^,]*, TopicPartition: ([^)]+)\)", text)
        if fetch:
            said = f"offset {fetch.group(1)} of topic partition {fetch.group(2)}"
        else:
            said = " ".join(reason.group(1).split()) if reason else user_line(exc)
        return SourceError(
            f"Offsets this stream's checkpoint needs are gone from Kafka ({said}: retention removed them, "
            "or the topic was deleted and made again); nothing was skipped: reload the tables from a full "
            "copy of their source (db.apply_schema_change(table, df)) and start a new checkpoint at the "
            "offsets that copy covers (starting_offsets=)."
        )
    line = user_line(exc)
    if "SaslAuthenticationException" in text or "Authentication failed" in text:
        return SourceError(
            f"{where} refused the stream's credentials (SASL authentication failed); nothing was read: "
            "check the connection string (Event Hubs: the namespace's or event hub's, from its Shared "
            "access policies) or the SASL options. Spark said: " + line
        )
    return None
