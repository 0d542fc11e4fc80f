"""How an Azure SDK error becomes one of ours: ``PathExistsError`` for a taken name,
``CredentialError`` for a 401 or 403 (or a token refused), ``StorageError`` for the rest; never
with token text."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from openmirror_nb._core.errors import CredentialError, PathExistsError, StorageError, scrub
from openmirror_nb._core.storage.adls_rename import TAKEN
from openmirror_nb._core.storage.auth import TokenRefused


@contextmanager
def azure_errors(
    action: str, path: str, *, where: str, refused: Callable[[int, str | None], CredentialError]
) -> Iterator[None]:
    """Translate the Azure errors raised inside: ``action`` on ``path`` (as the user named it) in
    the landing zone at ``where``; ``refused(status, code)`` builds the credential error."""
    from azure.core.exceptions import AzureError

    try:
        yield
    except TokenRefused:
        raise refused(401, None) from None
    except AzureError as exc:
        code, status = getattr(exc, "error_code", None), getattr(exc, "status_code", None)
        if code in TAKEN:
            raise PathExistsError(f"{path!r} already exists; it was not replaced.") from None
        if status in (401, 403):
            shown = None if code is None else str(getattr(code, "value", code))  # a str enum
            raise refused(status, shown) from None
        lines = (getattr(exc, "message", None) or str(exc)).strip().splitlines()
        parts = (f"HTTP {status}" if status else "", code or "", lines[0] if lines else "")
        detail = scrub(" ".join(str(p) for p in parts if p)).rstrip(".")
        raise StorageError(f"Cannot {action} {path!r} in {where}: {detail}.") from None
