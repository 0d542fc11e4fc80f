"""When a Delta table's change data feed is truly not there, and when a read failed otherwise.

A sync replaces the feed with a snapshot diff only where the feed does not exist over the range:
it was never enabled, a change or data file it needs was vacuumed, or the log of those versions
was cleaned up. Spark's Delta reader says so with its error classes (found when the feed is
opened, or mid-job when a vacuumed file is met); this package's own reader raises ``FeedGone``.
Anything else (a corrupt file, a refused or timed-out request, an expired token) is not a reason
to rewrite the table from a diff: it stops the sync.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlparse

from openmirror_nb._core.errors import OpenMirrorError

# Delta's error classes (delta-spark's delta-error-classes.json) and Spark's for a file that is
# gone, with what each says of the feed.
NOT_ENABLED = "the change data feed was not enabled over them"
VACUUMED = "a file the feed reads was vacuumed"
CLEANED = "their log was cleaned up"
GONE_CLASSES = {
    "DELTA_MISSING_CHANGE_DATA": NOT_ENABLED,
    "DELTA_LOG_FILE_NOT_FOUND": CLEANED,
    "DELTA_VERSION_NOT_FOUND": CLEANED,
    "DELTA_EMPTY_DIRECTORY": CLEANED,  # Delta 3.2 reading a cleaned-up range of the log
    # A file that is gone: a change or data file (vacuumed), or a commit (its log cleaned up).
    "DELTA_CHANGE_DATA_FILE_NOT_FOUND": VACUUMED,
    "DELTA_FILE_NOT_FOUND_DETAILED": VACUUMED,
    "FAILED_READ_FILE.FILE_NOT_EXIST": VACUUMED,  # Spark 4 meeting a vacuumed file mid-job
    "PATH_NOT_FOUND": VACUUMED,  # this package's reader
}
# The same, where the error carries no class (Spark 3.5 mid-job, Delta's own file errors).
GONE_TYPES = {
    "DeltaFileNotFoundException": CLEANED,
    "SparkFileNotFoundException": VACUUMED,
    "java.io.FileNotFoundException": VACUUMED,
}
_CLASS = re.compile(r"\[([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\]")


class FeedGone(OpenMirrorError):
    """This package's Delta reader found no change data feed over a range (see the module)."""


def feed_gone(exc: BaseException, uri: str) -> str | None:
    """Why the feed of the Delta table at ``uri`` is not there, if ``exc`` (or an error it was
    raised from) says it is not: a short reason naming Delta's error class; ``None`` for any other
    failure.

    A file or log said to be missing must be one of the table's own (its path is named), so a
    missing file of the landing zone or of anything else is never taken for a vacuumed feed.
    """
    where = unquote(urlparse(uri).path).rstrip("/")
    seen: set[int] = set()
    error: BaseException | None = exc
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, FeedGone):
            return str(error)
        text = str(error)
        named = [c for c in _CLASS.findall(text) if c in GONE_CLASSES]
        if "DELTA_MISSING_CHANGE_DATA" in named:
            return f"{NOT_ENABLED} (DELTA_MISSING_CHANGE_DATA)"
        if where and where in text:
            said = named[0] if named else next((t for t in GONE_TYPES if t in text), None)
            if said is not None:
                why = GONE_CLASSES.get(said) or GONE_TYPES[said]
                why = CLEANED if why == VACUUMED and "/_delta_log/" in text else why
                return f"{why} ({said.rpartition('.')[2] if said in GONE_TYPES else said})"
        error = error.__cause__ or error.__context__
    return None
