"""The per-table lock on OneLake / ADLS Gen2: a blob lease with a finite duration, renewed by a
thread while held, so a lock left by a dead process lapses and is taken over (design §4).

Whoever takes the lease records ``host:pid`` and the time in the lock file's metadata, so
``read_lock_status`` tells with one properties request who holds the lock (or held it last).
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from openmirror_nb._core.errors import LockTimeoutError, StorageError
from openmirror_nb._core.storage.base import LockStatus

HOLDER_KEY, SINCE_KEY = "openmirror_holder", "openmirror_since"  # metadata names: C# identifiers


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
                _record_holder(client, lease)
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
            try:
                holder = read_lock_status(client).holder
            except Exception:
                holder = None  # the timeout is the news; who holds the lock is a courtesy
            who = f" (held by {holder})" if holder else ""
            raise LockTimeoutError(
                f"Table {name!r} is locked by another writer{who} for more than {timeout:g} s; wait for "
                f"it to finish or raise lock_timeout (a lock left by a stopped process lapses within "
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


@contextmanager
def lease_lock(
    client: Any,
    lease_class: Any,
    *,
    name: str,
    timeout: float,
    lease_seconds: int,
    renew_interval: float,
    errors: Callable[[], AbstractContextManager[None]],
) -> Iterator[None]:
    """Hold the lease on ``client``'s lock file for the ``with`` block (``AdlsStorage.lock``)."""
    with errors():
        first_use = not client.exists()
    lease = acquire_lease(
        client, lease_class, name=name, timeout=timeout, lease_seconds=lease_seconds, errors=errors
    )
    try:
        with hold_lease(lease, name=name, lease_seconds=lease_seconds, renew_interval=renew_interval):
            yield
    finally:
        if first_use:
            # A lock file this call created goes again, so that a push rejected before it
            # published leaves the landing zone as it found it. A writer that leased the file
            # meanwhile keeps it (the delete needs its lease); one that finds it gone makes it.
            try:
                client.delete_file()
            except Exception:
                pass


def _record_holder(client: Any, lease: Any) -> None:
    """Write ``host:pid`` and the time into the lock file's metadata, under the lease just taken.

    Until this lands a status read shows the lease held with the previous holder's record. Best
    effort: the lease is the lock, the record only informs, so failing to write it must not fail
    (or leak) the lock.
    """
    holder = f"{socket.gethostname()}:{os.getpid()}".encode("ascii", "replace").decode()  # header-safe
    try:
        client.set_metadata({HOLDER_KEY: holder, SINCE_KEY: f"{time.time():.3f}"}, lease=lease)
    except Exception:
        pass


def read_lock_status(client: Any) -> LockStatus:
    """Whether the lock file's lease is held, and the recorded holder, from one properties request;
    never takes or waits for the lease. A missing lock file is a lock nobody has taken."""
    from azure.core.exceptions import ResourceNotFoundError

    try:
        props = client.get_file_properties()
    except ResourceNotFoundError:
        return LockStatus(held=False)
    # "locked" covers "leased" and "breaking": a breaking lease still excludes others until it ends.
    held = getattr(props.lease, "status", None) == "locked"
    metadata = props.metadata or {}
    holder = metadata.get(HOLDER_KEY) or None
    try:
        since = float(metadata[SINCE_KEY]) if holder else None
    except (KeyError, ValueError):
        since = None
    return LockStatus(held=held, holder=holder, since=since)
