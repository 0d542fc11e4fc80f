"""Calls to the Fabric REST API through semantic-link's ``FabricRestClient``, made safe outside Fabric.

sempy prints telemetry lines to stdout when imported outside Fabric and logs every HTTP error
with a traceback; both are kept out of the user's output. It asks for a workspace id with
``input()`` only from ``get_workspace_id()``, which nothing here calls: ids are always explicit.
"""

from __future__ import annotations

import contextlib
import email.utils
import importlib
import io
import logging
import re
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

from openmirror_nb._core.errors import ConfigError, FabricRestError, MissingDependencyError, scrub, user_line
from openmirror_nb._core.storage.credentials import resolve_credential

FABRIC_HINT = "pip install 'openmirror-nb[fabric]'"
MAX_RETRY_AFTER = 60.0  # seconds; a longer Retry-After is capped so a status call cannot hang
# 429 is left out so that our own loop, which honours Retry-After with a bound, handles it.
_RETRY_CONFIG = {"total": 3, "status_forcelist": [502, 503, 504], "backoff_factor": 1}
_GUID = re.compile(r"^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$")
_sleep = time.sleep  # replaced by tests, which must not wait


@contextlib.contextmanager
def _quiet_sempy() -> Iterator[None]:
    """Swallow sempy's stdout telemetry and its error-log tracebacks for the duration."""
    logger = logging.getLogger("SemPy")
    was_disabled, logger.disabled = logger.disabled, True
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        logger.disabled = was_disabled


def fabric_rest_client(*, credential: Any = None, base_url: str | None = None) -> Any:
    """A sempy ``FabricRestClient`` using ``credential`` (resolved like storage credentials).

    Args:
        credential: an azure ``TokenCredential``; default: Fabric notebook identity, else
            ``DefaultAzureCredential``.
        base_url: another API root (tests use a loopback server); default ``https://api.fabric.microsoft.com/``.

    Raises:
        MissingDependencyError: semantic-link-sempy is not installed.
    """
    credential = resolve_credential(credential)
    with _quiet_sempy():
        try:
            from sempy.fabric import FabricRestClient

            # fabric-analytics-sdk ships with sempy; it holds the context that sets the API root.
            context = importlib.import_module("fabric.analytics.environment.context")
        except ImportError:
            raise MissingDependencyError(f"Fabric status needs semantic-link-sempy; {FABRIC_HINT}.") from None
        if base_url is None:
            return FabricRestClient(credential=credential, retry_config=dict(_RETRY_CONFIG))
        with context.SetFabricDefaultContext(pbi_shared_host=base_url.rstrip("/")):
            return FabricRestClient(credential=credential, retry_config=dict(_RETRY_CONFIG))


def _retry_after(response: Any, attempt: int) -> float:
    value = (response.headers.get("Retry-After") or "").strip()
    if value.isdigit():
        wait = float(value)
    elif value and (when := email.utils.parsedate_to_datetime(value)) is not None:
        wait = when.timestamp() - time.time()
    else:
        wait = 2.0**attempt
    return min(max(wait, 0.0), MAX_RETRY_AFTER)


def call(client: Any, method: str, path: str, *, max_retries: int = 5) -> dict[str, Any]:
    """One API call returning its JSON body; a 429 waits ``Retry-After`` and retries, at most
    ``max_retries`` times.

    Raises:
        FabricRestError: any other error answer, or 429 after the last retry.
    """
    for attempt in range(max_retries + 1):
        with _quiet_sempy():
            try:
                response = client.request(method, path)
            except Exception as exc:  # sempy raises FabricHTTPException for every status >= 400
                response = getattr(exc, "response", None)
                if response is None:
                    raise FabricRestError(user_line(exc, f"{method} {path} failed"), status=0) from None
        if response.status_code == 429 and attempt < max_retries:
            _sleep(_retry_after(response, attempt))
            continue
        if response.status_code >= 400:
            raise _error(method, path, response)
        return response.json() if response.content else {}
    raise AssertionError("unreachable")


def _error(method: str, path: str, response: Any) -> FabricRestError:
    try:
        body = response.json()
    except ValueError:
        body = {}
    code, message = body.get("errorCode"), body.get("message") or response.reason
    if response.status_code == 429:
        message = f"still throttled after retries ({message})"
    text = f"{method} {path} answered HTTP {response.status_code} {code or ''}: {message}"
    return FabricRestError(scrub(text), status=response.status_code, error_code=code)


def pages(client: Any, method: str, path: str, key: str) -> Iterator[dict[str, Any]]:
    """Every element of ``key`` across the pages of a paged API (``continuationToken``)."""
    token: str | None = None
    while True:
        sep = "&" if "?" in path else "?"
        body = call(client, method, path if token is None else f"{path}{sep}continuationToken={quote(token)}")
        yield from body.get(key) or []
        token = body.get("continuationToken")
        if not token:
            return


def resolve_ids(client: Any, workspace: str, item: str) -> tuple[str, str]:
    """Workspace and mirrored-database ids, looked up by display name unless already GUIDs."""
    if not _GUID.match(workspace):
        workspace = _find(pages(client, "GET", "v1/workspaces", "value"), workspace, "workspace")
    if not _GUID.match(item):
        # OneLake paths may name the item with its type suffix: "<name>.MirroredDatabase".
        name = item.removesuffix(".MirroredDatabase")
        listing = pages(client, "GET", f"v1/workspaces/{workspace}/mirroredDatabases", "value")
        item = _find(listing, name, "mirrored database")
    return workspace, item


def _find(candidates: Iterator[dict[str, Any]], name: str, what: str) -> str:
    names = []
    for candidate in candidates:
        if candidate.get("displayName") == name:
            return str(candidate["id"])
        names.append(str(candidate.get("displayName")))
    shown = ", ".join(repr(n) for n in names[:5]) or "none"
    raise ConfigError(
        f"No {what} named {name!r} is visible to this credential (found: {shown}); pass its id."
    )
