"""Which sources a database's status report reads, by where the database is.

- Local: the landing zone and ``Files/Monitoring`` on disk, the local mirror's own progress (exact
  processed files) and its Delta tables' row counts (from the Delta log: cheap).
- OneLake: the landing zone and ``Files/Monitoring`` over DFS; inside Fabric also the REST status.
  Mirrored rows are counted only when asked (``reconcile``): it reads ``Tables/`` through
  ``deltalake`` with the same credential.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from openmirror_nb._core import runtime
from openmirror_nb._core.errors import NotSupportedError
from openmirror_nb._core.landing_zone.names import DEFAULT_SCHEMA
from openmirror_nb._core.model import TableRef
from openmirror_nb._core.status.gather import Sources
from openmirror_nb._core.status.reconcile import count_delta_rows
from openmirror_nb._core.storage.base import Storage
from openmirror_nb._core.target import LocalTarget, OneLakeTarget, Target

STORAGE_SCOPE = "https://storage.azure.com/.default"


def database_sources(
    target: Target, storage: Storage, *, credential: Any = None, count_mirrored: bool = False
) -> Sources:
    """The ``Sources`` of a database's report (see the module docstring)."""
    from openmirror_nb._core.storage.registry import open_files_storage

    files = open_files_storage(target, credential=credential)
    if isinstance(target, LocalTarget):
        from openmirror_nb._core.mirror.progress import applied_by_folder

        return Sources(
            landing_zone=storage,
            files=files,
            applied=lambda: applied_by_folder(target.root),
            mirrored_rows=local_row_counter(target),
        )
    assert isinstance(target, OneLakeTarget)
    rest_database: Callable[[], Any] | None = None
    rest_tables: Callable[[], list[Any]] | None = None
    if runtime.is_fabric():
        from openmirror_nb._core.fabric.status import get_mirroring_status, get_tables_mirroring_status

        def rest_database() -> Any:
            return get_mirroring_status(target.workspace, target.item, credential=credential)

        def rest_tables() -> list[Any]:
            return get_tables_mirroring_status(target.workspace, target.item, credential=credential)

    return Sources(
        landing_zone=storage,
        files=files,
        rest_database=rest_database,
        rest_tables=rest_tables,
        mirrored_rows=onelake_row_counter(target, credential) if count_mirrored else None,
    )


def local_row_counter(target: LocalTarget) -> Callable[[TableRef], int | None]:
    def count(ref: TableRef) -> int | None:
        path = target.tables / (ref.schema or DEFAULT_SCHEMA) / ref.name
        return count_delta_rows(str(path)) if (path / "_delta_log").is_dir() else None

    return count


def onelake_table_uri(target: OneLakeTarget, ref: TableRef) -> str:
    """``abfss://<ws>@<host>/<item>/Tables/<schema>/<table>``: where the service writes the table."""
    schema = ref.schema or DEFAULT_SCHEMA
    return f"abfss://{target.workspace}@{target.host}/{target.item}/Tables/{schema}/{ref.name}"


def onelake_row_counter(target: OneLakeTarget, credential: Any) -> Callable[[TableRef], int | None]:
    def count(ref: TableRef) -> int | None:
        from openmirror_nb._core.storage.credentials import identity_warnings_held, resolve_credential

        try:
            with identity_warnings_held():  # a failure is the one line below
                token = resolve_credential(credential).get_token(STORAGE_SCOPE).token
        except Exception as exc:  # any credential failure: say why the count is missing
            raise NotSupportedError(
                f"no storage token for {target} ({type(exc).__name__}); pass credential= to connect()."
            ) from None
        options = {"bearer_token": token, "use_fabric_endpoint": "true"}
        return count_delta_rows(onelake_table_uri(target, ref), storage_options=options)

    return count
