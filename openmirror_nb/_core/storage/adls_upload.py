"""Uploading to OneLake / ADLS Gen2: one new file sent in chunks (create, append, flush), and many
local files at once. ``AdlsStorage`` uploads under a temporary name and renames into place."""

from __future__ import annotations

import io
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import IO, Any

from openmirror_nb._core.errors import StorageError

CHUNK = 8 * 1024 * 1024  # bytes per append request


def upload_new(client: Any, stream: IO[bytes], size: int) -> None:
    """Write ``stream`` (``size`` bytes) to the SDK file ``client``'s path, which must not exist."""
    # create + append + flush: upload_data() neither creates a file without overwrite nor writes
    # an empty one; If-None-Match on the create keeps even the unique temp name from replacing.
    from azure.core import MatchConditions

    client.create_file(match_condition=MatchConditions.IfMissing)
    offset = 0
    while chunk := stream.read(CHUNK):
        client.append_data(chunk, offset=offset, length=len(chunk))
        offset += len(chunk)
    if offset != size:
        raise StorageError(f"Read {offset} bytes where {size} were expected; the file changed meanwhile.")
    if offset:
        client.flush_data(offset, close=True)


def upload_all(
    pairs: list[tuple[str, str]], put: Callable[[str, IO[bytes], int], None], *, parallelism: int
) -> None:
    """Send each (local file, storage path) pair with ``put(path, stream, size)``, ``parallelism``
    at a time; the first error is raised once every upload has ended."""

    def one(pair: tuple[str, str]) -> None:
        with open(pair[0], "rb") as fh:
            size = fh.seek(0, io.SEEK_END)
            fh.seek(0)
            put(pair[1], fh, size)

    if not pairs:
        return
    with ThreadPoolExecutor(max_workers=max(1, min(parallelism, len(pairs)))) as pool:
        futures = [pool.submit(one, pair) for pair in pairs]
    for future in futures:
        error = future.exception()
        if error is not None:
            raise error  # all uploads have ended; each failed one left nothing behind
