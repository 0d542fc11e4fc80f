"""The narrow storage protocol every backend implements (local folder, OneLake/ADLS).

Paths are ``/``-separated strings relative to the backend's root (the landing zone). The
protocol is what the publish protocol needs and nothing more: complete-or-absent writes,
no-clobber renames, listings with sizes and modification times, and a per-name lock.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Entry:
    """One child of a listed folder."""

    name: str
    is_dir: bool
    size: int
    mtime: float


@dataclass(frozen=True)
class LockStatus:
    """Who holds a named lock, as far as the backend can tell without taking it.

    Attributes:
        held: Another holder (or this process) has the lock right now.
        holder: ``host:pid`` of the holder that took it last, if recorded.
        since: When that holder took it (epoch seconds), if recorded.
    """

    held: bool
    holder: str | None = None
    since: float | None = None


class Storage(Protocol):
    """A landing-zone store.

    Attributes:
        ATOMIC_RENAME: ``rename`` publishes a complete file in one step.
        SPARK_WRITABLE: Spark in this process can write straight to ``uri(path)``; otherwise
            Spark writes to a local folder and ``upload_files`` copies the parts up.
    """

    ATOMIC_RENAME: bool
    SPARK_WRITABLE: bool

    def read_bytes(self, path: str) -> bytes:
        """Return the whole file; ``FileNotFoundError`` if absent."""
        ...

    def write_bytes(self, path: str, data: bytes, *, overwrite: bool = False) -> None:
        """Write a file completely or not at all, creating parent folders.

        Without ``overwrite`` an existing file raises ``PathExistsError`` and stays untouched.
        """
        ...

    def exists(self, path: str) -> bool: ...

    def list_dir(self, path: str) -> list[Entry]:
        """The direct children of a folder; an empty list if the folder is absent."""
        ...

    def rename(self, src: str, dst: str) -> None:
        """Move ``src`` to ``dst``, refusing with ``PathExistsError`` if ``dst`` exists."""
        ...

    def delete(self, path: str, *, recursive: bool = True) -> None:
        """Delete a file or a folder tree; a missing path is not an error.

        With ``recursive=False`` a folder is removed only if it is empty (else left alone).
        """
        ...

    def move_folder(self, src: str, dst: str) -> None:
        """Move a whole folder in one atomic step (a table folder into the trash, design §4).

        ``StorageError`` if ``src`` is absent; ``PathExistsError`` if ``dst`` exists.
        """
        ...

    def lock(self, name: str, *, timeout: float) -> AbstractContextManager[None]:
        """Hold an exclusive lock called ``name`` across processes; ``LockTimeoutError`` after
        ``timeout`` seconds. The holder (``host:pid``) and the time it took the lock are recorded
        for ``lock_status``."""
        ...

    def lock_status(self, name: str) -> LockStatus:
        """Whether lock ``name`` is held now, and by whom since when; never waits or takes it."""
        ...

    def uri(self, path: str) -> str:
        """The URI Spark uses to read or write ``path`` (``file:///...``, ``abfss://...``)."""
        ...

    def upload_files(self, pairs: list[tuple[str, str]], *, parallelism: int = 8) -> None:
        """Copy local files (absolute paths) to storage paths, each complete or absent."""
        ...

    def walk_files(self, path: str) -> Iterator[tuple[str, Entry]]:
        """Every file below ``path`` as (relative path, entry), depth first, sorted by name."""
        ...
