"""Authentication failures on OneLake's protocol, with the real SDK against the loopback DFS server:
a credential that finds no identity, no credential at all, 401 and 403 answers. Each fails once, in
one line, at the first try (asserted by counting credential calls and requests, never by a timer);
a token that had worked and is then refused gets exactly one refresh; transient failures keep their
retries."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

import openmirror_nb as om
from openmirror_nb._core.errors import CredentialError, StorageError
from openmirror_nb._core.storage.auth import FAILURE_TTL, GuardedCredential
from tests.dfs_server import NoIdentityCredential, StaticTokenCredential, TokenSequence
from tests.storage.test_adls import make_storage, sent

REPO = Path(__file__).resolve().parents[2]
FIX = ("az login", "AZURE_CLIENT_ID, AZURE_TENANT_ID and AZURE_CLIENT_SECRET", "credential=")


def one_line(error: BaseException) -> str:
    text = str(error)
    assert "\n" not in text and all(fix in text for fix in FIX), text
    return text


def refusals(dfs, fs: str, status: int) -> int:
    return sum(r.status == status for r in sent(dfs, fs))


def test_a_credential_without_identity_fails_once_in_one_line(dfs, fs):
    credential = NoIdentityCredential()
    storage = make_storage(dfs, fs, credential=credential)
    for attempt in (
        lambda: storage.list_dir(""),
        lambda: storage.read_bytes("t/_metadata.json"),
        lambda: storage.write_bytes("t/a", b"1"),
    ):
        with pytest.raises(CredentialError) as caught:
            attempt()
        assert isinstance(caught.value, StorageError) and om.CredentialError is CredentialError
        text = one_line(caught.value)
        assert text.startswith(
            "NoIdentityCredential obtained no token for OneLake (no identity found (test)):"
        )
        assert caught.value.credential == "NoIdentityCredential" and caught.value.status is None
    # One token request in all: no retry of the first operation, and the failure is remembered
    # by the others (and by the cleanup requests a failed upload makes).
    assert credential.calls == 1
    assert sent(dfs, fs) == []  # no request left without a token


def test_the_failure_is_remembered_for_a_while_then_asked_again(dfs_auth, fs):
    class SignsInLater(NoIdentityCredential):
        def get_token(self, *scopes, **kwargs):
            if self.calls == 0:
                return super().get_token(*scopes, **kwargs)
            self.calls += 1
            return StaticTokenCredential().get_token(*scopes)

    now = [1000.0]
    credential = SignsInLater()
    storage = make_storage(dfs_auth, fs, credential=GuardedCredential(credential, clock=lambda: now[0]))
    with pytest.raises(CredentialError):
        storage.list_dir("")
    now[0] += FAILURE_TTL - 1
    with pytest.raises(CredentialError):
        storage.list_dir("")
    assert credential.calls == 1
    now[0] += 1  # the user ran `az login` meanwhile
    assert storage.list_dir("") == []
    assert credential.calls == 2


def test_no_credential_at_all_is_one_chain_run_without_a_request(dfs, fs, no_credentials, monkeypatch):
    from azure.identity import DefaultAzureCredential

    runs = []
    real = DefaultAzureCredential.get_token
    monkeypatch.setattr(
        DefaultAzureCredential, "get_token", lambda self, *a, **k: runs.append(1) or real(self, *a, **k)
    )
    storage = make_storage(dfs, fs, credential=None)
    chain = storage.credential.inner
    assert isinstance(chain, DefaultAzureCredential)
    # tests/conftest.py keeps managed identity (the 169.254.169.254 probe) out of every chain
    assert "ManagedIdentityCredential" not in {type(c).__name__ for c in chain.credentials}
    with pytest.raises(CredentialError) as caught:
        storage.list_dir("")
    assert one_line(caught.value).startswith("DefaultAzureCredential obtained no token for OneLake: run")
    with pytest.raises(CredentialError):
        storage.write_bytes("t/a", b"1")
    assert len(runs) == 1 and sent(dfs, fs) == []


def test_no_credential_is_our_line_alone_with_the_root_logger_configured(dfs, fs, no_credentials, caplog):
    """The chain's warning (13 lines naming each credential it tried) says what our one line says:
    it reaches no handler of the root logger, while the SDK's other warnings still do."""
    caplog.set_level(logging.WARNING)
    storage = make_storage(dfs, fs, credential=None)
    with pytest.raises(CredentialError) as caught:
        storage.list_dir("")
    one_line(caught.value)
    assert [r.name for r in caplog.records if r.name.startswith("azure")] == []
    logging.getLogger("azure.identity._credentials.chained").warning("not about this request")
    assert [r.getMessage() for r in caplog.records] == ["not about this request"]


def test_no_credential_prints_our_line_alone_under_basic_config(dfs, fs, no_credentials):
    """As a user sees it: a fresh interpreter whose root logger ``logging.basicConfig`` configured
    (a StreamHandler on stderr) connects to OneLake (the loopback server) without a credential."""
    code = (
        "import logging, sys\n"
        f"sys.path.insert(0, {str(REPO)!r})\n"
        "logging.basicConfig(level=logging.WARNING)\n"
        "from openmirror_nb._core.storage.adls import AdlsStorage\n"
        f"storage = AdlsStorage(account_url={dfs.account_url!r}, file_system={fs!r}, base_path='m/Files/LandingZone',"
        f" connection_verify={str(dfs.cert)!r})\n"
        "try:\n"
        "    storage.list_dir('')\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, exc, file=sys.stderr)\n"
    )
    # The environment is the test's: managed identity out of the chain (tests/conftest.py), no sign-in.
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "CredentialError DefaultAzureCredential obtained no token"
    ), lines
    assert sent(dfs, fs) == []


@pytest.fixture(params=[False, True], ids=["plain-401", "401-with-challenge"])
def challenge(request, dfs_auth):
    """Azure Storage sends WWW-Authenticate with a 401, and the SDK then asks for a new token and
    resends once by itself; OneLake may not. Both must end the same way."""
    dfs_auth.challenge = request.param
    return request.param


def test_a_token_never_accepted_is_refused_at_the_first_request(dfs_auth, fs, challenge):
    credential = StaticTokenCredential("not-accepted")
    storage = make_storage(dfs_auth, fs, credential=credential)
    with pytest.raises(CredentialError) as caught:
        storage.list_dir("")
    text = one_line(caught.value)
    assert text.startswith(
        f"OneLake refused the token of StaticTokenCredential for workspace {fs!r} (HTTP 401"
    )
    assert caught.value.status == 401 and "not-accepted" not in text
    assert credential.calls == 1 and len(sent(dfs_auth, fs)) == 1


def test_no_access_is_a_403_at_the_first_request_naming_the_workspace(dfs_auth, fs):
    storage = make_storage(dfs_auth, fs)
    dfs_auth.refuse(403)
    with pytest.raises(CredentialError) as caught:
        storage.list_dir("")
    text = one_line(caught.value)
    assert text.startswith("OneLake answered HTTP 403 AuthorizationPermissionMismatch: the identity of ")
    assert f"has no access to workspace {fs!r} (item 'mirror.MirroredDatabase')" in text
    assert caught.value.status == 403 and len(sent(dfs_auth, fs)) == 1


def test_a_refused_rename_is_a_credential_error_too(dfs_auth, fs):
    storage = make_storage(dfs_auth, fs)
    dfs_auth.refuse(403, when=lambda r: "x-ms-rename-source" in r.headers)
    with pytest.raises(CredentialError, match="HTTP 403 AuthorizationPermissionMismatch"):
        storage.write_bytes("t/a", b"1")
    renames = [r for r in sent(dfs_auth, fs) if "x-ms-rename-source" in r.headers]
    assert [r.status for r in renames] == [403]


def test_a_token_that_worked_is_refreshed_once_when_refused(dfs_auth, fs, challenge):
    credential = TokenSequence("t1", "t2", "t3")
    dfs_auth.tokens |= {"t1", "t2"}
    storage = make_storage(dfs_auth, fs, credential=credential)
    storage.write_bytes("t/a", b"1")
    assert credential.calls == 1
    dfs_auth.tokens.discard("t1")  # expired or revoked while the storage is in use
    assert storage.read_bytes("t/a") == b"1"
    assert credential.calls == 2 and refusals(dfs_auth, fs, 401) == 1
    dfs_auth.tokens.discard("t2")  # and the new token is refused too: one refresh, then the answer
    with pytest.raises(CredentialError, match=r"HTTP 401"):
        storage.read_bytes("t/a")
    assert credential.calls == 3 and refusals(dfs_auth, fs, 401) == 3
    with pytest.raises(CredentialError, match=r"HTTP 401"):
        storage.read_bytes("t/a")  # no token has worked since: the first answer stands
    assert refusals(dfs_auth, fs, 401) == 4
    # without a challenge the SDK dropped the refused token and asks for one; with it, it kept it
    assert credential.calls == (3 if challenge else 4)


def test_transient_failures_keep_their_retries(dfs_auth, fs):
    storage = make_storage(dfs_auth, fs)
    storage.write_bytes("t/a", b"1")
    for status, code in ((503, "ServerBusy"), (500, "InternalError")):
        dfs_auth.inject(lambda r: r.method == "GET" and r.path == fs, status=status, code=code)
    assert [e.name for e in storage.list_dir("")] == ["t"]
    listings = [r.status for r in sent(dfs_auth, fs) if r.method == "GET" and r.path == fs]
    assert listings == [503, 500, 200]


def test_the_sdk_default_retry_policy_does_not_retry_a_credential_failure(dfs, fs):
    """``ExponentialRetry``, the SDK's default, retries every AzureError: the
    ``ClientAuthenticationError`` of a credential once cost four runs of the chain, 80 s apart in
    all (issue 23)."""
    from azure.storage.filedatalake import ExponentialRetry

    credential = NoIdentityCredential()
    # without its back-off, so that a regression fails on the count, fast
    retry = ExponentialRetry(initial_backoff=0, increment_base=0, random_jitter_range=0)
    storage = make_storage(dfs, fs, credential=credential, retry_policy=retry)
    with pytest.raises(CredentialError):
        storage.exists("t")
    assert credential.calls == 1
