"""Which Azure token credential to use, and how to keep tokens out of every message.

Order: an explicit ``credential=``; inside a Fabric notebook its own identity
(``notebookutils.credentials.getToken``); otherwise ``DefaultAzureCredential``. Tokens live only in
memory, are reused until shortly before they expire, and are never printed, logged or stored. The
Azure SDK's own log lines stay out of a notebook whose logging nobody configured (``quiet_azure_logs``).
"""

from __future__ import annotations

import base64
import importlib
import json
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from openmirror_nb._core import runtime
from openmirror_nb._core.errors import MissingDependencyError

if TYPE_CHECKING:
    from azure.core.credentials import AccessToken

AZURE_HINT = "pip install 'openmirror-nb[azure]'"
# notebookutils names its token audiences; these are the scopes our clients ask for.
_AUDIENCES = {
    "https://storage.azure.com": "storage",
    "https://onelake.fabric.microsoft.com": "storage",
    "https://api.fabric.microsoft.com": "pbi",
    "https://analysis.windows.net/powerbi/api": "pbi",
}
_REFRESH_MARGIN = 300.0  # seconds before expiry when a cached token is replaced
_FALLBACK_LIFETIME = 1800.0  # used when a token's expiry cannot be read
# Their warnings (the whole credential chain, once per try) would reach a notebook through
# Python's last-resort handler; our one-line CredentialError says what they say.
_SDK_LOGGERS = ("azure.identity", "azure.core.pipeline.policies.http_logging_policy")


def _audience(scope: str) -> str:
    base = scope.removesuffix("/.default").rstrip("/")
    return _AUDIENCES.get(base, "storage")


def _expires_on(token: str) -> float:
    """The ``exp`` claim of a JWT, or a conservative lifetime when it is not a readable JWT."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        return float(claims["exp"])
    except (IndexError, ValueError, KeyError, TypeError):
        return time.time() + _FALLBACK_LIFETIME


def _notebook_get_token() -> Callable[[str], str] | None:
    """``notebookutils.credentials.getToken`` (or the older ``mssparkutils``), if importable."""
    for module, attribute in (("notebookutils", None), ("notebookutils", "mssparkutils")):
        try:
            utils = importlib.import_module(module)
            utils = getattr(utils, attribute) if attribute else utils
            return utils.credentials.getToken  # type: ignore[no-any-return]
        except (ImportError, AttributeError):
            continue
    return None


class NotebookTokenCredential:
    """A ``TokenCredential`` over the Fabric notebook identity, caching each audience's token."""

    def __init__(self, get_token: Callable[[str], str] | None = None) -> None:
        self._get_token = get_token or _notebook_get_token()
        self._cache: dict[str, tuple[str, float]] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return "NotebookTokenCredential()"

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        from azure.core.credentials import AccessToken

        if self._get_token is None:
            raise MissingDependencyError(
                "The Fabric notebook identity needs notebookutils, which exists only inside Fabric; "
                "pass credential= (an azure-identity credential) instead."
            )
        audience = _audience(scopes[0] if scopes else "https://storage.azure.com/.default")
        with self._lock:
            cached = self._cache.get(audience)
            if cached is None or cached[1] - _REFRESH_MARGIN <= time.time():
                token = self._get_token(audience)
                cached = (token, _expires_on(token))
                self._cache[audience] = cached
        return AccessToken(cached[0], int(cached[1]))

    def close(self) -> None:
        """Part of the TokenCredential protocol; there is nothing to release."""


def quiet_azure_logs() -> None:
    """Give each Azure SDK logger nobody configured (no level, no handler) a ``NullHandler``.

    Python prints a record that finds no handler at all through its last-resort handler (stderr,
    so the notebook); a ``NullHandler`` stops that, while the records still propagate to any
    handler the user sets up, before or after (``logging.basicConfig``). Called when the toolkit
    builds an Azure credential or client, not at import.
    """
    for name in _SDK_LOGGERS:
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET and not logger.handlers:
            logger.addHandler(logging.NullHandler())


def resolve_credential(credential: Any = None) -> Any:
    """The credential to use: ``credential`` if given, else the notebook identity inside Fabric,
    else ``azure.identity.DefaultAzureCredential`` (environment, managed identity, Azure CLI, ...).

    Raises:
        MissingDependencyError: azure-identity is needed and not installed.
    """
    quiet_azure_logs()
    if credential is not None:
        return credential
    if runtime.is_fabric():
        get_token = _notebook_get_token()
        if get_token is not None:
            return NotebookTokenCredential(get_token)
    try:
        from azure.identity import DefaultAzureCredential
    except ImportError:
        raise MissingDependencyError(
            f"Connecting to OneLake needs azure-identity for credentials; {AZURE_HINT}, or pass credential=."
        ) from None
    return DefaultAzureCredential()
