"""The one exception family of openmirror_nb.

Every error a user can cause is an ``OpenMirrorError`` with a one-line message that names the
offending value and the fix. Notebooks show that line instead of a traceback
(``_render_traceback_``), while the exception type still tells pipelines and nbmake it failed.
This module imports nothing from the rest of the package.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable


class OpenMirrorError(Exception):
    """Base class of every error raised on purpose by openmirror_nb."""

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


class ConfigError(OpenMirrorError, ValueError):
    """A connect target, option or argument is not valid."""


class NotSupportedError(OpenMirrorError):
    """The request is valid but this backend or version cannot do it yet."""


class MissingDependencyError(OpenMirrorError, ImportError):
    """An optional package is needed; the message says which extra installs it."""


class StorageError(OpenMirrorError):
    """The storage backend failed to read, write or rename a path."""


class CredentialError(StorageError):
    """No token was obtained for OneLake, or the service refused it (HTTP 401) or refused its
    identity access to the workspace (HTTP 403).

    A ``StorageError``, so code that handles storage failures handles this one too. ``credential``
    is the credential's class name (never a secret); ``status`` the HTTP status, or ``None`` when no
    token was obtained.
    """

    def __init__(self, message: str, *, credential: str, status: int | None = None) -> None:
        super().__init__(message)
        self.credential, self.status = credential, status


class PathExistsError(StorageError):
    """A no-clobber write or rename found its destination already taken."""


class SourceError(OpenMirrorError):
    """A source (a Delta table's log, data or change files) failed to read for a reason that is
    not the source's own state: an unreadable or corrupt file, a refused or timed-out request.
    Nothing was published; the message says what failed."""


class LockTimeoutError(OpenMirrorError):
    """Another writer held the table lock for longer than the timeout."""


class MirrorWaitTimeoutError(OpenMirrorError):
    """The mirror did not reach the state waited for (table gone, table back) within the timeout."""


class MetricsTimeoutError(OpenMirrorError):
    """A Spark job returned but the counts it observed (or a listener event) did not arrive within
    ``spark.openmirror.metricsTimeout`` seconds; nothing was published."""


class PushCancelledError(OpenMirrorError):
    """A push was interrupted: before it was decided (nothing published, ``decided`` false) or
    after (it finished publishing first, ``decided`` true)."""

    def __init__(self, message: str, *, decided: bool) -> None:
        super().__init__(message)
        self.decided = decided


class ReseedError(OpenMirrorError):
    """A reseed stopped after the table folder was deleted; ``step`` is the one to run next and
    the message says how to continue."""

    def __init__(self, message: str, *, step: int) -> None:
        super().__init__(message)
        self.step = step


class LandingZoneError(OpenMirrorError):
    """The landing zone is not in a state this push can build on."""


class MirrorError(OpenMirrorError):
    """The local mirror cannot replicate a landing zone (bad path, unreadable state)."""


class InvalidNameError(OpenMirrorError, ValueError):
    """A table, schema or column name breaks the landing-zone naming rules."""


class KeyColumnsError(OpenMirrorError, ValueError):
    """Key columns are missing, null, duplicated or differ from the table's keyColumns."""


class ChangeFeedError(OpenMirrorError, ValueError):
    """A change feed carries operation values the chosen convention does not define."""


class SchemaChangeError(OpenMirrorError, ValueError):
    """The DataFrame's schema differs from the table in a way the mirror cannot absorb."""


class UnsupportedTypeError(OpenMirrorError, ValueError):
    """A column type cannot be written in the chosen file format."""


class FabricRestError(OpenMirrorError):
    """The Fabric REST API answered with an error (status, errorCode and message kept)."""

    def __init__(self, message: str, *, status: int, error_code: str | None = None) -> None:
        super().__init__(message)
        self.status, self.error_code = status, error_code


def did_you_mean(value: str, choices: Iterable[str]) -> str:
    """Return ``" Did you mean 'x'?"`` for the nearest choice, or an empty string."""
    close = difflib.get_close_matches(value, list(choices), n=1, cutoff=0.6)
    return f" Did you mean '{close[0]}'?" if close else ""


def preview(values: Iterable[object], *, limit: int = 5) -> str:
    """Render the first few values of a collection for an error message."""
    items = list(values)
    shown = ", ".join(repr(v) for v in items[:limit])
    return shown + (f" (and {len(items) - limit} more)" if len(items) > limit else "")


# What may never reach a user's screen or a log: bearer tokens, Authorization header values, JWTs
# and SAS signatures, as the Azure SDK and Spark put them into their own error texts; passwords in
# a connection URL (``?password=``, ``;password=``, ``//user:password@``), as drivers echo them; the
# key of an Event Hubs connection string.
_SECRETS = [
    re.compile(r"(?i)(authorization['\"]?\s*[:=]\s*['\"]?)[^'\",}\r\n]+"),
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]+"),
    re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9._-]+"),  # a JWT anywhere
    re.compile(r"(?i)([?&]sig=)[^&\s'\"]+"),
    re.compile(r"(?i)([?&;:]\s*(?:password|pwd)\s*=\s*)[^;&\s'\",}]+"),
    re.compile(r"(//[^/:@\s]+:)[^@/\s]+(?=@)"),
    re.compile(r"(?i)(jdbc:oracle:[a-z]+:[^/@\s]+/)[^@\s]+(?=@)"),
    # an Event Hubs / Service Bus connection string's key or token (SharedAccessKey=, ...Signature=)
    re.compile(r"(?i)(SharedAccess(?:Key|Signature)\s*=\s*)[^;\s'\"]+"),
]
LINE_LIMIT = 300  # characters of a foreign error's text shown in a line (Java and SDK texts run long)
# A refusal this package raises inside a Spark job (``raise_error``) starts with this mark, so that its
# line is found again in whatever Spark wraps it in (Spark 3.5: a cause of TASK_WRITE_FAILED).
REFUSAL_MARK = "[openmirror] "
_RAISED = re.compile(re.escape(REFUSAL_MARK) + r"(.+?)(?: SQLSTATE: P0001| at [\w$.]+\(|$)")


def scrub(text: str) -> str:
    """Remove bearer tokens, Authorization header values, JWTs, SAS signatures and URL passwords
    from ``text``."""
    for pattern in _SECRETS:
        text = pattern.sub(lambda m: (m.group(1) if m.groups() else "") + "***", text)
    return text


def user_line(
    exc: BaseException, what: str | None = None, *, hide: Callable[[str], str] | None = None
) -> str:
    """The one line a user sees for ``exc``: in a panel's status line, a status note, a job's log,
    or inside the message of an error that wraps it. Every exception said in one line goes here.

    An ``OpenMirrorError`` says it in its own message. An error from the JVM as py4j raises it
    (it carries ``java_exception``) is the Java exception's ``Class: message``, not py4j's text
    with the Java stack trace. Any other error (Spark's, the Azure SDK's, the OS's) becomes
    ``Type: text``; a refusal this package raised inside a Spark job (``raise_error``) is its
    own line again. Whitespace is folded, a foreign error's text cut at ``LINE_LIMIT``
    characters; ``what`` prefixes the line as ``what: ...``; secrets are scrubbed from the whole
    line, ``what`` included. ``hide`` removes the caller's own secrets (a source's password) from
    the error's text, before it is cut, so no part of one is left at the cut.
    """
    java = _java_text(exc)
    text = " ".join((java or str(exc)).split())
    text = scrub(hide(text) if hide is not None else text)
    raised = _RAISED.search(_refusal(exc)) or _RAISED.search(text)
    if raised:
        text = raised[1]
    elif not isinstance(exc, OpenMirrorError):
        if len(text) > LINE_LIMIT:
            text = text[: LINE_LIMIT - 1].rstrip() + "…"
        if not java:
            text = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    text = text or type(exc).__name__
    return f"{scrub(what)}: {text}" if what else text


def _refusal(exc: BaseException) -> str:
    """The message of the cause, in the Java exception ``exc`` carries, that is this package's
    refusal (``REFUSAL_MARK``); empty when none is."""
    java = getattr(exc, "java_exception", None)
    try:
        for _ in range(12):  # a cause chain is short; a cycle must not hang the error's line
            if java is None:
                return ""
            message = str(java.getMessage() or "")
            if REFUSAL_MARK in message:
                return " ".join(message.split())
            java = java.getCause()
    except Exception:  # a dead gateway: no cause to ask
        return ""
    return ""


def _java_text(exc: BaseException) -> str:
    """``Class: message`` of the Java exception a py4j error carries (empty when there is none, or
    the JVM cannot be asked: the gateway may be gone by the time the error is shown)."""
    java = getattr(exc, "java_exception", None)
    if java is None:
        return ""
    try:
        name, message = java.getClass().getSimpleName(), java.getMessage()
    except Exception:  # a dead gateway: py4j's own text is what is left
        return ""
    return f"{name}: {message}" if message else str(name)
