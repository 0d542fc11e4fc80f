"""Which Azure token credential to use, and how to keep tokens out of every message.

Order: an explicit ``credential=``; inside a Fabric notebook its own identity
(``notebookutils.credentials.getToken``); otherwise ``DefaultAzureCredential``. Tokens live only in
memory, are reused until shortly before they expire, and are never printed, logged or stored. The
Azure SDK's own log lines stay out of a notebook whose logging nobody configured (``quiet_azure_logs``);
its warnings about a token request that fails stay out whatever the logging configuration, as the
one-line error raised instead says the same (``identity_warnings_held``).
"""

from __future__ import annotations

import base64
import importlib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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


class _HeldWarnings(logging.Filter):
    """On the ``azure.identity`` loggers: a warning logged by a thread inside
    ``identity_warnings_held`` goes to that thread's list instead of to any handler."""

    def __init__(self) -> None:
        super().__init__()
        self.local = threading.local()

    def filter(self, record: logging.LogRecord) -> bool:
        held: list[logging.LogRecord] | None = getattr(self.local, "held", None)
        if held is None or record.levelno < logging.WARNING:
            return True
        held.append(record)
        return False


_HELD = _HeldWarnings()


@contextmanager
def identity_warnings_held() -> Iterator[None]:
    """Around one token request: the warnings ``azure.identity`` logs meanwhile in this thread (the
    chain's many lines naming each credential it tried, a credential's "get_token failed") are
    dropped if the block raises, since the caller turns that failure into one line saying the same;
    if it returns, they are handled as usual, in order. Other threads' records, records below
    WARNING and other loggers are untouched.

    A logger's filter sees only the records logged to that logger, not those its children pass up,
    so the filter goes on each ``azure.identity`` logger there is (one per module, made at import);
    outside this block it lets every record through.
    """
    for name, logger in logging.Logger.manager.loggerDict.copy().items():
        if name.split(".")[:2] == ["azure", "identity"] and isinstance(logger, logging.Logger):
            if _HELD not in logger.filters:
                logger.addFilter(_HELD)
    outer = getattr(_HELD.local, "held", None)
    held: list[logging.LogRecord] = []
    _HELD.local.held = held
    try:
        yield
    finally:
        _HELD.local.held = outer
    for record in held:  # the block returned: nothing replaces what they say
        logging.getLogger(record.name).handle(record)


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
