"""``%openmirror kafka``: a Kafka or Event Hubs mirror started from a cell, kept with the
streams ``%openmirror stream --list`` and ``--stop`` see."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Protocol

from openmirror_nb._core.cli import start_kafka

if TYPE_CHECKING:
    from openmirror_nb import MirroredDatabase, MirrorStream


class MagicState(Protocol):
    """What this verb uses of ``commands.MagicState``."""

    streams: dict[str, MirrorStream]

    def database(self) -> MirroredDatabase: ...


def kafka(state: MagicState, args: argparse.Namespace) -> MirrorStream:
    """``db.mirror_kafka(om.Kafka(...) | om.EventHubs(...), tables=, schemas=, keys=, feed=,
    checkpoint=, trigger=, ...)`` (``cli.start_kafka``); not awaited, as ``stream`` is not:
    ``ms.await_termination()`` or ``%openmirror stream --stop ID`` ends it."""
    started = start_kafka(state.database(), args)
    state.streams[str(started.query.id)] = started
    return started
