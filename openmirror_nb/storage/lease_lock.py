"""The per-table lock on OneLake / ADLS Gen2: a blob lease with a finite duration, renewed by a
thread while held, so a lock left by a dead process lapses and is taken over (design §4)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from openmirror_nb.errors import LockTimeoutError, StorageError


def acquire_lease(
    client: Any,
    lease_class: Any,
    *,
    name: str,
    timeout: float,
    lease_seconds: int,
    errors: Callable[[], AbstractContextManager[None]],
) -> Any:
    """Take the lease on ``client``'s (lock) file, creating the file on first use."""
    from azure.core import MatchConditions
    from azure.core.exceptions import ResourceExistsError, ResourceNotFoundError

    lease = lease_class(client, lease_id=str(uuid.uuid4()))
    deadline, pause = time.monotonic() + timeout, 0.05
    while True:
        with errors():
            try:
                lease.acquire(lease_duration=lease_seconds)
                return lease
            except ResourceNotFoundError:  # first use of this name: create the empty lock file
                try:
                    client.create_file(match_condition=MatchConditions.IfMissing)
                except ResourceExistsError:
                    pass
                continue
            except ResourceExistsError:
                pass  # LeaseAlreadyPresent: another writer holds it
        if time.monotonic() >= deadline:
            raise LockTimeoutError(
                f"Table {name!r} is locked by another writer for more than {timeout:g} s; wait for it to "
                f"finish or raise lock_timeout (a lock left by a stopped process lapses within "
                f"{lease_seconds} s)."
            )
        time.sleep(max(0.0, min(pause, deadline - time.monotonic())))
        pause = min(pause * 1.5, 1.0)


@contextmanager
def hold_lease(lease: Any, *, name: str, lease_seconds: int, renew_interval: float) -> Iterator[None]:
    """Renew ``lease`` in the background while the block runs, then release it."""
    stop, lost = threading.Event(), threading.Event()

    def renew() -> None:
        renewed = time.monotonic()
        while not stop.wait(renew_interval):
            try:
                lease.renew()
                renewed = time.monotonic()
            except Exception as exc:
                # 409/412: broken or taken over. Anything else (network) is retried until the
                # lease would have run out. Either way the holder hears of it when the block ends.
                taken = getattr(exc, "status_code", None) in (409, 412)
                if taken or time.monotonic() - renewed >= lease_seconds:
                    lost.set()
                    return

    renewer = threading.Thread(target=renew, name=f"openmirror-lease-{name}", daemon=True)
    renewer.start()
    try:
        yield
    finally:
        stop.set()
        renewer.join()
        try:
            lease.release()
        except Exception:
            pass  # expired or taken over: nothing left to release
    if lost.is_set():
        raise StorageError(
            f"The lock {name!r} lapsed while held (its lease could not be renewed) and another writer "
            "may have taken it; check the table before publishing again."
        )
