"""A landing zone on OneLake / ADLS Gen2 through ``azure-storage-file-datalake`` (extra "azure").

Writes upload to an underscore temporary name in the same folder (``adls_upload``), then rename;
the rename is conditional (``If-None-Match: *``) unless overwriting, so a published file is never
replaced (``adls_rename``). The per-name lock is a blob lease with a finite duration, renewed by a
thread while held, so a lock left by a dead process expires and is taken over (``lease_lock``).
Azure errors become ours in ``adls_errors``. Azure is imported only when this backend is built.
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC
from typing import IO, Any
from urllib.parse import urlparse

from openmirror_nb._core import runtime
from openmirror_nb._core.errors import CredentialError, MissingDependencyError, StorageError
from openmirror_nb._core.storage.adls_errors import azure_errors
from openmirror_nb._core.storage.adls_rename import AdlsRenamer
from openmirror_nb._core.storage.adls_upload import upload_all, upload_new
from openmirror_nb._core.storage.auth import AuthRetryPolicy, GuardedCredential, refused
from openmirror_nb._core.storage.base import Entry, LockStatus
from openmirror_nb._core.storage.credentials import AZURE_HINT, resolve_credential
from openmirror_nb._core.storage.lease_lock import lease_lock, read_lock_status
from openmirror_nb._core.target import LANDING_ZONE, OneLakeTarget

LOCK_FOLDER = "_openmirror/locks"


def _sdk() -> Any:
    try:
        import azure.storage.filedatalake as sdk
    except ImportError:
        raise MissingDependencyError(
            f"OneLake storage needs azure-storage-file-datalake; {AZURE_HINT}."
        ) from None
    return sdk


class AdlsStorage:
    """Storage rooted at ``base_path`` inside one ADLS Gen2 / OneLake file system.

    Args:
        account_url: ``https://onelake.dfs.fabric.microsoft.com`` or an ADLS account's DFS URL.
        file_system: the file system (on OneLake: the workspace name or id).
        base_path: the root inside it, e.g. ``<item>/Files/LandingZone``.
        credential: an azure ``TokenCredential``; ``resolve_credential`` picks one when omitted.
            It is used through a ``GuardedCredential`` (``self.credential``): a failed token
            request, a 401 or a 403 is one ``CredentialError`` at the first try (``auth``).
        lease_seconds: lock lease duration (15-60, the range the service allows).
        renew_interval: seconds between lease renewals; a third of the lease by default.
        spark_writable: Spark can write ``uri(path)`` directly; by default only inside Fabric.
        **client_kwargs: passed to ``DataLakeServiceClient`` (e.g. ``connection_verify``); a
            ``retry_policy`` given here is wrapped by ``AuthRetryPolicy`` like the default one.
    """

    ATOMIC_RENAME = True

    def __init__(
        self,
        *,
        account_url: str,
        file_system: str,
        base_path: str = "",
        credential: Any = None,
        lease_seconds: int = 30,
        renew_interval: float | None = None,
        spark_writable: bool | None = None,
        **client_kwargs: Any,
    ) -> None:
        if not 15 <= lease_seconds <= 60:
            raise StorageError(
                f"lease_seconds={lease_seconds} is outside 15-60, the range the service allows."
            )
        self._sdk = _sdk()
        self.SPARK_WRITABLE = runtime.is_fabric() if spark_writable is None else spark_writable
        self.file_system, self.base_path = file_system, base_path.strip("/")
        self.host = urlparse(account_url).netloc
        self.lease_seconds = lease_seconds
        self.renew_interval = lease_seconds / 3 if renew_interval is None else renew_interval
        self.credential = GuardedCredential.wrap(resolve_credential(credential))
        # The SDK builds its default retry policy from the same keyword arguments.
        retry = client_kwargs.pop("retry_policy", None) or self._sdk.ExponentialRetry(**client_kwargs)
        service = self._sdk.DataLakeServiceClient(
            account_url,
            credential=self.credential,
            retry_policy=AuthRetryPolicy(retry, self.credential),
            **client_kwargs,
        )
        self._fs = service.get_file_system_client(file_system)
        # Checked here, once: a missing SDK ability must stop the push before it writes anything.
        self._renamer = AdlsRenamer(
            self._fs, file_system, self._sdk, errors=self._errors, refused=self._refused, where=self.uri("")
        )

    @classmethod
    def from_target(
        cls, target: OneLakeTarget, *, credential: Any = None, folder: str = LANDING_ZONE
    ) -> AdlsStorage:
        """The landing zone (or, with ``folder="Files"``, the Files area) of a OneLake item."""
        return cls(
            account_url=f"https://{target.host}",
            file_system=target.workspace,
            base_path=f"{target.item}/{folder}",
            credential=credential,
        )

    def __repr__(self) -> str:
        return f"AdlsStorage({self.uri('')!r})"

    def _full(self, path: str) -> str:
        parts = [p for p in path.split("/") if p not in ("", ".")]
        if ".." in parts or path.startswith("/"):
            raise StorageError(f"Path {path!r} leaves the landing zone {self.uri('')}.")
        return "/".join([self.base_path, *parts] if self.base_path else parts)

    def _refused(self, status: int, code: str | None) -> CredentialError:
        item = self.base_path.partition("/")[0]
        return refused(status, code, credential=self.credential.name, workspace=self.file_system, item=item)

    def _errors(self, action: str, path: str) -> AbstractContextManager[None]:
        """Azure errors become ours, with no token text (``adls_errors``)."""
        return azure_errors(action, path, where=self.uri(""), refused=self._refused)

    def read_bytes(self, path: str) -> bytes:
        from azure.core.exceptions import ResourceNotFoundError

        client = self._fs.get_file_client(self._full(path))
        with self._errors("read", path):
            try:
                return bytes(client.download_file().readall())
            except ResourceNotFoundError:
                raise FileNotFoundError(f"{path!r} does not exist in {self.uri('')}.") from None

    def write_bytes(self, path: str, data: bytes, *, overwrite: bool = False) -> None:
        self._put(path, io.BytesIO(data), len(data), overwrite=overwrite)

    def _put(self, path: str, stream: IO[bytes], size: int, *, overwrite: bool) -> None:
        """Upload under an underscore temporary name next to ``path``, then rename it into place."""
        full = self._full(path)
        folder, _, name = full.rpartition("/")
        tmp = "/".join(p for p in (folder, f"_{name}.{uuid.uuid4().hex}.tmp") if p)
        try:
            with self._errors("upload", path):
                upload_new(self._fs.get_file_client(tmp), stream, size)
            self._rename(tmp, full, path, size=size, overwrite=overwrite)
        except BaseException:
            self._discard(tmp)
            raise

    def _rename(self, src: str, dst: str, shown: str, *, size: int, overwrite: bool) -> None:
        """Rename full path ``src`` (a file of ``size`` bytes) to ``dst`` in one conditional rename."""
        self._renamer.rename(
            src,
            dst,
            shown,
            overwrite=overwrite,
            folder=False,
            landed=lambda: not self._exists(src) and self._size(dst) == size,
        )

    def _discard(self, full: str) -> None:
        try:
            self._fs.get_file_client(full).delete_file()
        except Exception:
            pass  # best effort: the service ignores an orphaned underscore file

    def _exists(self, full: str) -> bool:
        with self._errors("check", full):
            return bool(self._fs.get_file_client(full).exists())

    def _size(self, full: str) -> int | None:
        from azure.core.exceptions import ResourceNotFoundError

        with self._errors("check", full):
            try:
                return int(self._fs.get_file_client(full).get_file_properties().size)
            except ResourceNotFoundError:
                return None

    def exists(self, path: str) -> bool:
        return self._exists(self._full(path))

    def list_dir(self, path: str) -> list[Entry]:
        found = self._paths(self._full(path), recursive=False)
        return sorted((Entry(n.rpartition("/")[2], d, s, m) for n, d, s, m in found), key=lambda e: e.name)

    def _paths(self, full: str, *, recursive: bool) -> list[tuple[str, bool, int, float]]:
        """(name, is_dir, size, mtime) of every path below ``full``; [] if it is absent.

        ``get_paths`` follows ``x-ms-continuation`` page by page until the listing ends.
        """
        from azure.core.exceptions import ResourceNotFoundError

        found = []
        with self._errors("list", full):
            try:
                for p in self._fs.get_paths(path=full or None, recursive=recursive):
                    if p.name.strip("/") == full:
                        continue  # a file path lists itself
                    mtime = p.last_modified.replace(tzinfo=p.last_modified.tzinfo or UTC).timestamp()
                    is_dir = bool(p.is_directory)
                    found.append((p.name, is_dir, 0 if is_dir else int(p.content_length or 0), mtime))
            except ResourceNotFoundError:
                return []
        return found

    def rename(self, src: str, dst: str) -> None:
        full_src = self._full(src)
        size = self._size(full_src)
        if size is None:
            raise StorageError(f"Cannot publish {dst!r}: its source {src!r} does not exist.")
        self._rename(full_src, self._full(dst), dst, size=size, overwrite=False)

    def delete(self, path: str, *, recursive: bool = True) -> None:
        from azure.core.exceptions import HttpResponseError, ResourceNotFoundError

        with self._errors("delete", path):
            try:
                self._fs.get_file_client(self._full(path)).delete_file(recursive=recursive)
            except ResourceNotFoundError:
                pass
            except HttpResponseError as exc:
                # A non-recursive delete of a non-empty folder leaves it alone: someone is using it.
                if getattr(exc, "error_code", None) != "DirectoryNotEmpty":
                    raise

    def move_folder(self, src: str, dst: str) -> None:
        # DFS renames a folder with all it holds in one request; readers never see it half moved.
        full_src, full_dst = self._full(src), self._full(dst)
        if full_src == self.base_path or not self._exists(full_src):
            raise StorageError(f"Cannot move {src!r}: there is no such folder below {self.uri('')}.")
        self._renamer.rename(
            full_src,
            full_dst,
            dst,
            overwrite=False,
            folder=True,
            landed=lambda: not self._exists(full_src) and self._exists(full_dst),
        )

    @contextmanager
    def lock(self, name: str, *, timeout: float) -> Iterator[None]:
        path = f"{LOCK_FOLDER}/{name}.lock"
        client = self._fs.get_file_client(self._full(path))
        with lease_lock(
            client,
            self._sdk.DataLakeLeaseClient,
            name=name,
            timeout=timeout,
            lease_seconds=self.lease_seconds,
            renew_interval=self.renew_interval,
            errors=lambda: self._errors("lock", path),
        ):
            yield

    def lock_status(self, name: str) -> LockStatus:
        path = f"{LOCK_FOLDER}/{name}.lock"
        with self._errors("read the lock", path):
            return read_lock_status(self._fs.get_file_client(self._full(path)))

    def uri(self, path: str) -> str:
        return f"abfss://{self.file_system}@{self.host}/{self._full(path) if path else self.base_path}"

    def upload_files(self, pairs: list[tuple[str, str]], *, parallelism: int = 8) -> None:
        upload_all(
            pairs, lambda path, fh, size: self._put(path, fh, size, overwrite=False), parallelism=parallelism
        )

    def walk_files(self, path: str) -> Iterator[tuple[str, Entry]]:
        full, prefix = self._full(path), "/".join(p for p in path.split("/") if p)
        files = [
            (name[len(full) + 1 if full else 0 :], Entry(name.rpartition("/")[2], False, size, mtime))
            for name, is_dir, size, mtime in self._paths(full, recursive=True)
            if not is_dir
        ]
        # Sorting by path components gives the order of a depth-first walk sorted per folder.
        for rel, entry in sorted(files, key=lambda item: item[0].split("/")):
            yield (f"{prefix}/{rel}" if prefix else rel), entry
