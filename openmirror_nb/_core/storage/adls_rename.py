"""The no-clobber rename of OneLake / ADLS Gen2 paths (publishing a file, ``move_folder``) and the
two ways it can be sent, chosen once when the backend is built.

Preferred: one raw DFS ``PUT`` with ``x-ms-rename-source`` through the SDK's own client pipeline,
which is a private attribute (``FileSystemClient._pipeline``). If an SDK release drops it, the
public ``rename_file`` / ``rename_directory`` with ``MatchConditions.IfMissing`` send the same
conditional rename (plus ``mode=legacy``). If neither exists the backend refuses to be built, so a
push never fails on an ``AttributeError`` half-way, after its journal is written.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any
from urllib.parse import quote

from openmirror_nb._core.errors import NotSupportedError, PathExistsError, StorageError

# Answers meaning "the destination is taken": ADLS sends 409 PathAlreadyExists for If-None-Match: *;
# 412 ConditionNotMet is accepted too in case a OneLake front end answers the generic way.
TAKEN = {"PathAlreadyExists", "ConditionNotMet", "BlobAlreadyExists"}
SDK_REQUIREMENT = "azure-storage-file-datalake>=12.20,<13"


def sdk_version(sdk: Any) -> str:
    """The installed azure-storage-file-datalake version, for messages."""
    version = getattr(sdk, "__version__", None)
    if version:
        return str(version)
    try:
        return importlib.metadata.version("azure-storage-file-datalake")
    except importlib.metadata.PackageNotFoundError:
        return "(unknown version)"


class AdlsRenamer:
    """Renames full paths inside one file system without replacing a taken destination.

    Args:
        fs: the SDK ``FileSystemClient``.
        file_system: its name.
        sdk: the ``azure.storage.filedatalake`` module.
        errors: ``errors(action, shown)``, the backend's context turning Azure errors into ours.
        refused: ``refused(status, code)``, the backend's error for a 401 or 403 answer.
        where: the landing zone's URI, for messages.

    Attributes:
        via: ``"rest"`` (raw PUT through the SDK pipeline) or ``"sdk"`` (public rename methods).
    """

    def __init__(
        self,
        fs: Any,
        file_system: str,
        sdk: Any,
        *,
        errors: Callable[[str, str], AbstractContextManager[None]],
        refused: Callable[[int, str | None], Exception],
        where: str,
    ) -> None:
        self._fs, self.file_system, self._errors, self._where = fs, file_system, errors, where
        self._refused = refused
        self._pipeline: Any = getattr(fs, "_pipeline", None)
        public = [(sdk.DataLakeFileClient, "rename_file"), (sdk.DataLakeDirectoryClient, "rename_directory")]
        if callable(getattr(self._pipeline, "run", None)):
            self.via = "rest"
        elif all(callable(getattr(cls, name, None)) for cls, name in public):
            self.via = "sdk"
        else:
            raise NotSupportedError(
                f"azure-storage-file-datalake {sdk_version(sdk)} has neither the client pipeline nor "
                f"rename_file/rename_directory that no-clobber renames need; pip install '{SDK_REQUIREMENT}'."
            )

    def rename(
        self, src: str, dst: str, shown: str, *, overwrite: bool, folder: bool, landed: Callable[[], bool]
    ) -> None:
        """Rename full path ``src`` to ``dst``; ``PathExistsError`` if ``dst`` is taken (unless
        ``overwrite``). ``landed()`` tells whether ``dst`` already holds what this rename would put
        there: a retry of a rename whose first answer was lost sees its own result (source gone,
        destination taken) and must not report it as a failure. Only we move a source we own.
        """
        status, code = self._send(src, dst, shown, overwrite=overwrite, folder=folder)
        if status == 404 and code == "RenameDestinationParentPathNotFound":
            self._make_folder(dst.rpartition("/")[0], shown)
            status, code = self._send(src, dst, shown, overwrite=overwrite, folder=folder)
        if status in (200, 201):
            return
        if code in (*TAKEN, "SourcePathNotFound") and landed():
            return
        if code in TAKEN:
            raise PathExistsError(f"{shown!r} already exists; it was not replaced.")
        if status in (401, 403):
            raise self._refused(status, code)
        raise StorageError(
            f"Cannot rename to {shown!r} in {self._where}: HTTP {status} {code or ''}".rstrip() + "."
        )

    def _send(
        self, src: str, dst: str, shown: str, *, overwrite: bool, folder: bool
    ) -> tuple[int, str | None]:
        if self.via == "rest":
            return self._send_rest(src, dst, shown, overwrite=overwrite)
        return self._send_sdk(src, dst, shown, overwrite=overwrite, folder=folder)

    def _send_rest(self, src: str, dst: str, shown: str, *, overwrite: bool) -> tuple[int, str | None]:
        """One DFS ``PUT`` carrying ``x-ms-rename-source`` (the same request for files and folders).

        Not ``DataLakeFileClient.rename_file``: several projects report it failing on OneLake with
        SourcePathNotFound (peers.md section 7), and the Microsoft Open Mirroring SDK, bc2adls and the
        MongoDB connector all rename with this raw REST call instead. It goes through the SDK's own
        pipeline (credential, retries, transport), names the source ``/<filesystem>/<path>`` (the
        form bc2adls uses on OneLake), omits the SDK's ``mode=legacy``, and sends
        ``If-None-Match: *`` so a taken destination answers 409 instead of being replaced (stack.md
        section 8). ``tests/storage/test_live_onelake.py`` checks that refusal on real OneLake.
        """
        from azure.core.rest import HttpRequest

        client = self._fs.get_file_client(dst)
        headers = {
            "x-ms-rename-source": f"/{quote(self.file_system)}/{quote(src)}",
            "x-ms-version": client.api_version,
        }
        if not overwrite:
            headers["If-None-Match"] = "*"
        with self._errors("rename to", shown):
            response = self._pipeline.run(HttpRequest("PUT", client.url, headers=headers)).http_response
        return int(response.status_code), response.headers.get("x-ms-error-code")

    def _send_sdk(
        self, src: str, dst: str, shown: str, *, overwrite: bool, folder: bool
    ) -> tuple[int, str | None]:
        """The public SDK rename: the same conditional PUT, sent by the SDK with ``mode=legacy``."""
        from azure.core import MatchConditions
        from azure.core.exceptions import HttpResponseError

        if folder:
            rename = self._fs.get_directory_client(src).rename_directory
        else:
            rename = self._fs.get_file_client(src).rename_file
        conditions = {} if overwrite else {"match_condition": MatchConditions.IfMissing}
        with self._errors("rename to", shown):
            try:
                rename(f"{self.file_system}/{dst}", **conditions)
            except HttpResponseError as exc:
                code = getattr(exc, "error_code", None)
                # The SDK turns known codes into a str enum; compare and show the plain code.
                return int(exc.status_code or 0), None if code is None else str(getattr(code, "value", code))
        return 201, None

    def _make_folder(self, full: str, shown: str) -> None:
        from azure.core import MatchConditions
        from azure.core.exceptions import ResourceExistsError

        with self._errors("create the folder of", shown):
            try:
                self._fs.get_directory_client(full).create_directory(
                    match_condition=MatchConditions.IfMissing
                )
            except ResourceExistsError:
                pass
