"""When OneLake authentication fails: one ``CredentialError`` at the first try, not minutes of retries.

The storage SDK's retry policy retries every ``AzureError``, the ``ClientAuthenticationError`` a
credential raises when it finds no identity included: ``DefaultAzureCredential`` then ran its whole
chain four times, over some 80 s, before the error (issue 23). HTTP 401 and 403 answers are not
retried by the SDK (only 408 and 5xx are), but they read as bare status codes. Here:

- ``GuardedCredential`` wraps the credential. A failed token request becomes a ``CredentialError``,
  which is no ``AzureError``, so no retry policy retries it; it is remembered for ``FAILURE_TTL``
  seconds, so the requests an operation still makes on its way out (cleanup, parallel uploads, the
  lease renewal) do not run the chain again.
- ``AuthRetryPolicy`` wraps the SDK's retry policy, which keeps retrying transient failures. A 401
  to a token that had worked (it expired or was revoked during a long push) gets one new token and
  one resend; any other 401 and every 403 is the answer.
- ``refused`` says what a 401 or 403 means and what to do.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from openmirror_nb._core.errors import CredentialError, OpenMirrorError, scrub
from openmirror_nb._core.storage.credentials import identity_warnings_held

# Seconds a failed token request is answered from memory: long enough for the requests one
# operation still makes, short enough that a retry after `az login` asks again.
FAILURE_TTL = 10.0
FIX = (
    "run `az login`, set a service principal in AZURE_CLIENT_ID, AZURE_TENANT_ID and "
    "AZURE_CLIENT_SECRET, or pass credential= to connect()"
)
_CHAIN_SUMMARY = "failed to retrieve a token from the included credentials"


class TokenRefused(Exception):
    """Raised inside the SDK pipeline when the service answered 401 with a challenge and no token
    had worked since the last refusal: not an ``AzureError``, so nothing retries it; the backend
    turns it into the ``CredentialError`` of a 401."""


def no_token(credential: str, exc: BaseException) -> CredentialError:
    """The error of a token request that failed, with the reason when it says more than the
    chain's summary (a client secret rejected, a tenant not found)."""
    lines = scrub(str(exc)).strip().splitlines()
    reason = lines[0].strip().rstrip(".") if lines and _CHAIN_SUMMARY not in lines[0] else ""
    shown = f" ({reason[:200]})" if reason else ""
    text = f"{credential} obtained no token for OneLake{shown}: {FIX}."
    return CredentialError(text, credential=credential)


def refused(status: int, code: str | None, *, credential: str, workspace: str, item: str) -> CredentialError:
    """The error of a 401 (token not accepted) or 403 (identity without access) answer."""
    answer = f"HTTP {status}{f' {code}' if code else ''}"
    if status == 403:
        text = (
            f"OneLake answered {answer}: the identity of {credential} has no access to workspace "
            f"{workspace!r} (item {item!r}); ask a workspace admin for a role that can write "
            f"(Contributor or higher), or use another identity: {FIX}."
        )
    else:
        text = (
            f"OneLake refused the token of {credential} for workspace {workspace!r} ({answer}: "
            f"expired, revoked, or issued for another tenant); {FIX}."
        )
    return CredentialError(text, credential=credential, status=status)


class _Attempt:
    """Token requests made during one request through ``AuthRetryPolicy``, on one thread."""

    def __init__(self) -> None:
        self.tokens = 0


class GuardedCredential:
    """A ``TokenCredential`` over another that fails once, in one line, and remembers it.

    Args:
        credential: the credential asked for tokens.
        clock: monotonic seconds, for the failure memory (tests pass a fake clock).

    Attributes:
        name: the wrapped credential's class name, for messages.
        worked: the last answer to a token of this credential was not a 401.
    """

    def __init__(self, credential: Any, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.inner, self.name = credential, type(credential).__name__
        self.worked = False
        self._clock = clock
        self._failure: tuple[str, float] | None = None
        self._local = threading.local()

    @classmethod
    def wrap(cls, credential: Any) -> GuardedCredential:
        """``credential`` guarded, or itself when it already is."""
        return credential if isinstance(credential, GuardedCredential) else cls(credential)

    def __repr__(self) -> str:
        return f"GuardedCredential({self.name})"

    def get_token(self, *scopes: str, **kwargs: Any) -> Any:
        attempt: _Attempt | None = getattr(self._local, "attempt", None)
        if attempt is not None:
            attempt.tokens += 1
            # The bearer-token policy answers a 401 carrying a challenge by asking for a token with
            # the challenge's tenant (or claims) and resending once: worth it only for a token
            # that had worked, not for one the service has refused since.
            if ("tenant_id" in kwargs or "claims" in kwargs) and not self.worked:
                raise TokenRefused()
        failure = self._failure
        if failure is not None and self._clock() - failure[1] < FAILURE_TTL:
            raise CredentialError(failure[0], credential=self.name)
        try:
            with identity_warnings_held():  # a failure is our one line below, not the SDK's warnings too
                token = self.inner.get_token(*scopes, **kwargs)
        except OpenMirrorError:
            raise
        except Exception as exc:  # any credential's failure: the chain's, a secret's, notebookutils'
            error = no_token(self.name, exc)
            self._failure = (str(error), self._clock())
            raise error from None
        self._failure = None
        return token

    def close(self) -> None:
        """Part of the TokenCredential protocol: close the wrapped credential."""
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()

    def begin(self) -> _Attempt:
        """Start counting this thread's token requests (``AuthRetryPolicy``)."""
        attempt = _Attempt()
        self._local.attempt = attempt
        return attempt

    def end(self) -> None:
        self._local.attempt = None


class AuthRetryPolicy:
    """The outermost retry layer of an SDK pipeline: ``retry`` (the SDK's policy) retries transient
    failures; this adds the one resend a 401 to a token that had worked deserves.

    A pipeline links its policies through ``next``; this one hands its link to ``retry``, which
    sends through the rest of the pipeline (the bearer-token policy drops its token on a 401, so
    the resend asks the credential for a new one). Like any ``retry_policy`` given to the SDK, the
    one instance serves every client the service client makes.
    """

    def __init__(self, retry: Any, guard: GuardedCredential) -> None:
        self._retry, self._guard = retry, guard

    @property
    def next(self) -> Any:
        return self._retry.next

    @next.setter
    def next(self, policy: Any) -> None:
        self._retry.next = policy

    def send(self, request: Any) -> Any:
        body: Any = getattr(request.http_request, "body", None)
        start = body.tell() if callable(getattr(body, "tell", None)) else None
        attempt = self._guard.begin()
        try:
            response = self._retry.send(request)
            status = response.http_response.status_code
            # attempt.tokens == 0: the refused token was one already in use, not one just issued.
            if status == 401 and self._guard.worked and attempt.tokens == 0 and _rewind(body, start):
                response = self._retry.send(request)
                status = response.http_response.status_code
        finally:
            self._guard.end()
        if status == 401:
            self._guard.worked = False
        elif status != 403:
            self._guard.worked = True
        return response


def _rewind(body: Any, start: int | None) -> bool:
    """Put a stream body back where it started; ``False`` if it cannot be resent."""
    if start is None:
        return body is None or isinstance(body, bytes | bytearray | str)
    try:
        body.seek(start)
    except (OSError, ValueError):
        return False
    return True
