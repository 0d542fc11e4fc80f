"""When the versions one ``db.sync_delta`` push brings were committed, for the table's freshness
summaries (``landing_zone.freshness_log``): the commit of the first version after the one the
table held (the oldest change) and the commit of the version synced to (the newest); on a first
sync, the latter for both.

A Delta commit's timestamp is its in-commit timestamp where the table has them, else its log
file's modification time (Delta PROTOCOL.md, "In-Commit Timestamps"): what its change data feed's
``_commit_timestamp`` and ``DESCRIBE HISTORY`` say. Only those two commits are read, and on a feed
sync not even them: the feed read the range's commits already (``DeltaSource.commit_times``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from openmirror_nb._core.errors import user_line
from openmirror_nb._core.landing_zone.freshness_log import SourceTimes

if TYPE_CHECKING:
    from openmirror_nb._core.pipeline.delta.source import DeltaSource

log = logging.getLogger("openmirror_nb")


def sync_times(source: DeltaSource, held: int | None, now: int, *, asked: float) -> SourceTimes:
    """The source times of a sync from version ``held`` (``None``: a first sync) to ``now``;
    ``asked``: when this machine asked the source for its version (epoch seconds), the fallback.

    A log cleaned up past ``held + 1`` leaves only the newest commit to tell: the oldest is then
    that one too (a bound from above). A log that cannot be read at all leaves the time the
    version was asked, a read time: every commit made before it is in version ``now``.
    """
    first = now if held is None else held + 1
    for versions in ((first, now), (now,)) if first != now else ((now,),):
        try:
            stamps = source.commit_times(versions)
        except Exception as exc:  # freshness only measures: a commit it cannot read fails no sync
            log.info(
                "The commit times of %s at %s could not be read: %s", source.uri, versions, user_line(exc)
            )
            continue
        oldest, newest = stamps[versions[0]].timestamp(), stamps[now].timestamp()
        # The writer's clock (in-commit timestamps) or the store's (file times), never this
        # machine's: the skew between them is unknown.
        return SourceTimes("commit", min(oldest, newest), newest, skew=None)
    log.warning(
        "The commit times of %s could not be read; its freshness counts from when its version was read",
        source.uri,
    )
    return SourceTimes.read_at(asked)
