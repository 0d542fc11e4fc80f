"""The listener that saves a Kafka mirror's lag after each batch (``landing_zone.stream_lags``)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from openmirror_nb._core.landing_zone.stream_lags import save_lag
from openmirror_nb._core.storage.base import Storage

log = logging.getLogger("openmirror_nb")


def listener(
    storage: Storage, query_id: Callable[[], str | None], tables: Callable[[], Mapping[str, str]]
) -> Any:
    """A ``StreamingQueryListener`` saving the lag of query ``query_id()`` after each batch."""
    from pyspark.sql.streaming.listener import StreamingQueryListener

    class LagListener(StreamingQueryListener):
        def onQueryStarted(self, event: Any) -> None:
            pass

        def onQueryProgress(self, event: Any) -> None:
            try:
                if str(event.progress.id) == query_id():
                    save_lag(storage, event.progress, tables())
            except Exception as exc:  # a listener that raises would be dropped by Spark
                log.warning("Could not save the Kafka lag of query %s: %s", query_id(), exc)

        def onQueryIdle(self, event: Any) -> None:
            pass

        def onQueryTerminated(self, event: Any) -> None:
            pass

    return LagListener()
