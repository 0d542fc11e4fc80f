"""A landing zone in a local folder: the embedded default and the test oracle.

No-clobber publication uses ``os.link`` + ``unlink``: ``link`` fails if the destination exists,
which is the local equivalent of ADLS ``If-None-Match: *`` on a rename. Locks are ``flock`` on
files released by the kernel if the holder dies; a local mirrored database keeps them beside its
landing zone (``<db>/.openmirror/locks``), so that taking a lock — which a rejected push does
too — never changes the landing zone. A bare ``LocalStorage`` keeps them under
``_openmirror/locks`` in the root, which the service ignores.
"""

from __future__ import annotations

import fcntl
import os
import socket
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from openmirror_nb._core.errors import LockTimeoutError, PathExistsError, StorageError
from openmirror_nb._core.storage.base import Entry, LockStatus, Storage

LOCK_FOLDER = "_openmirror/locks"
FILE_SCHEME = "file://"


def file_uri(path: Path) -> str:
    """The ``file:`` URI Spark reads and writes ``path`` through: not percent-encoded, because
    Hadoop takes what follows ``file://`` as the path itself (``Path.as_uri()`` would make Spark
    write a folder named ``my%20table`` for ``my table``, or ``%C3%B1`` for ``ñ``)."""
    return FILE_SCHEME + path.as_posix()


def fetch_folder(storage: Storage, path: str, *, local_dir: str | None) -> str:
    """A Spark URI for a store folder; with ``local_dir`` (Spark cannot read the store) its files
    are downloaded there first."""
    if local_dir is None:
        return storage.uri(path)
    for rel, _ in storage.walk_files(path):
        target = Path(local_dir) / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(storage.read_bytes(rel))
    return file_uri(Path(local_dir) / path)


class LocalStorage:
    """Storage rooted at a local folder (the landing zone)."""

    ATOMIC_RENAME = True
    SPARK_WRITABLE = True

    def __init__(
        self, root: str | os.PathLike[str], *, lock_dir: str | os.PathLike[str] | None = None
    ) -> None:
        self.root = Path(root).resolve()
        self.lock_dir = Path(lock_dir).resolve() if lock_dir is not None else self.root / LOCK_FOLDER

    def _lock_file(self, name: str) -> Path:
        if "/" in name or name in ("", ".", ".."):
            raise StorageError(f"Lock name {name!r} is not a plain file name.")
        return self.lock_dir / f"{name}.lock"

    def _path(self, path: str) -> Path:
        full = (self.root / path).resolve() if path else self.root
        if full != self.root and self.root not in full.parents:
            raise StorageError(f"Path {path!r} leaves the landing zone {self.root}.")
        return full

    def read_bytes(self, path: str) -> bytes:
        return self._path(path).read_bytes()

    def write_bytes(self, path: str, data: bytes, *, overwrite: bool = False) -> None:
        target = self._path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        # The temporary name starts with "_" so the service never picks up a half-written file.
        tmp = target.parent / f"_{target.name}.{uuid.uuid4().hex}.tmp"
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            if overwrite:
                os.replace(tmp, target)
            else:
                self._link(tmp, target, path)
        finally:
            tmp.unlink(missing_ok=True)

    def exists(self, path: str) -> bool:
        return self._path(path).exists()

    def list_dir(self, path: str) -> list[Entry]:
        folder = self._path(path)
        if not folder.is_dir():
            return []
        entries = []
        for child in folder.iterdir():
            try:
                st = child.stat()
            except FileNotFoundError:
                continue  # moved away while listing (the mirror cleans up concurrently)
            is_dir = child.is_dir()
            entries.append(Entry(child.name, is_dir, 0 if is_dir else st.st_size, st.st_mtime))
        return sorted(entries, key=lambda e: e.name)

    def rename(self, src: str, dst: str) -> None:
        source, target = self._path(src), self._path(dst)
        target.parent.mkdir(parents=True, exist_ok=True)
        # A published file's modification time is its publication time, as on a store where the
        # file appears when it is renamed (LastUpdateTimeFileDetection orders by it).
        try:
            os.utime(source)
        except FileNotFoundError:
            raise StorageError(f"Cannot publish {dst!r}: {src!r} does not exist.") from None
        self._link(source, target, dst)
        source.unlink()

    def _link(self, source: Path, target: Path, shown: str) -> None:
        try:
            os.link(source, target)
        except FileExistsError:
            raise PathExistsError(f"{shown!r} already exists; it was not replaced.") from None
        except FileNotFoundError as exc:
            raise StorageError(f"Cannot publish {shown!r}: {exc.strerror}.") from None

    def delete(self, path: str, *, recursive: bool = True) -> None:
        target = self._path(path)
        if target.is_dir() and not target.is_symlink():
            if not recursive:
                try:
                    target.rmdir()
                except OSError:
                    pass  # not empty: someone else is using it
                return
            for child in sorted(target.rglob("*"), key=lambda p: len(p.parts), reverse=True):
                if child.is_dir() and not child.is_symlink():
                    child.rmdir()
                else:
                    child.unlink(missing_ok=True)
            target.rmdir()
        else:
            target.unlink(missing_ok=True)

    def move_folder(self, src: str, dst: str) -> None:
        source, target = self._path(src), self._path(dst)
        if not source.is_dir():
            raise StorageError(f"Cannot move {src!r}: it is not a folder.")
        if target.exists():
            raise PathExistsError(f"{dst!r} already exists; it was not replaced.")
        target.parent.mkdir(parents=True, exist_ok=True)
        os.rename(source, target)  # one step: readers see the folder here or there, never half

    @contextmanager
    def lock(self, name: str, *, timeout: float) -> Iterator[None]:
        path = self._lock_file(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + timeout
        with open(path, "a+b") as fh:
            while True:
                try:
                    fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        holder = self.lock_status(name)
                        who = f" (held by {holder.holder})" if holder.holder else ""
                        raise LockTimeoutError(
                            f"Table {name!r} is locked by another writer{who} for more than "
                            f"{timeout:g} s; wait for it to finish or raise lock_timeout."
                        ) from None
                    time.sleep(0.05)
            try:
                # Who holds it and since when, for status and for the timeout message above.
                fh.seek(0)
                fh.truncate()
                fh.write(f"{socket.gethostname()}:{os.getpid()} {time.time():.3f}\n".encode())
                fh.flush()
                yield
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

    def lock_status(self, name: str) -> LockStatus:
        try:
            fh = open(self._lock_file(name), "rb")
        except FileNotFoundError:
            return LockStatus(held=False)
        with fh:
            try:
                # flock locks belong to an open file: a second open of the file conflicts with
                # every holder, this process's own included.
                fcntl.flock(fh.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
                held = False
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
            except BlockingIOError:
                held = True
            holder, _, since = fh.read().decode("utf-8", "replace").strip().rpartition(" ")
        try:
            return LockStatus(held=held, holder=holder or None, since=float(since) if holder else None)
        except ValueError:
            return LockStatus(held=held)

    def uri(self, path: str) -> str:
        return file_uri(self._path(path))

    def upload_files(self, pairs: list[tuple[str, str]], *, parallelism: int = 8) -> None:
        for local, path in pairs:
            self.write_bytes(path, Path(local).read_bytes(), overwrite=False)

    def walk_files(self, path: str) -> Iterator[tuple[str, Entry]]:
        for entry in self.list_dir(path):
            rel = f"{path}/{entry.name}" if path else entry.name
            if entry.is_dir:
                yield from self.walk_files(rel)
            else:
                yield rel, entry
