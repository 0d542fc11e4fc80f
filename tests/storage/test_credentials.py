"""Credential resolution, the notebook-identity token cache, scrubbing, and the storage registry."""

from __future__ import annotations

import base64
import json
import logging
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import pytest

from openmirror_nb._core.errors import scrub
from openmirror_nb._core.storage import credentials
from openmirror_nb._core.storage.credentials import NotebookTokenCredential, resolve_credential
from openmirror_nb._core.storage.local import LocalStorage
from openmirror_nb._core.storage.registry import open_files_storage, open_storage
from openmirror_nb._core.target import parse_target
from tests.dfs_server import StaticTokenCredential

REPO = Path(__file__).resolve().parents[2]


def jwt(exp: float) -> str:
    def part(obj) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    return f"{part({'alg': 'none'})}.{part({'exp': int(exp), 'aud': 'storage'})}.c2ln"


@pytest.fixture
def outside_fabric(monkeypatch):
    for name in ("FABRIC_RUNTIME_VERSION", "MSNOTEBOOKUTILS_VERSION", "SPARK_CLUSTER_NAME"):
        monkeypatch.delenv(name, raising=False)


def test_an_explicit_credential_wins(outside_fabric):
    mine = object()
    assert resolve_credential(mine) is mine


def test_outside_fabric_the_default_chain_is_used(outside_fabric):
    from azure.identity import DefaultAzureCredential

    assert isinstance(resolve_credential(), DefaultAzureCredential)


def test_inside_fabric_the_notebook_identity_is_used(monkeypatch):
    calls = []

    def get_token(audience: str) -> str:
        calls.append(audience)
        return jwt(time.time() + 3600)

    fake = types.ModuleType("notebookutils")
    fake.credentials = types.SimpleNamespace(getToken=get_token)
    monkeypatch.setitem(sys.modules, "notebookutils", fake)
    monkeypatch.setenv("FABRIC_RUNTIME_VERSION", "1.3")
    credential = resolve_credential()
    assert isinstance(credential, NotebookTokenCredential)
    first = credential.get_token("https://storage.azure.com/.default")
    again = credential.get_token("https://storage.azure.com/.default")
    api = credential.get_token("https://analysis.windows.net/powerbi/api/.default")
    assert first.token == again.token and calls == ["storage", "pbi"]
    assert abs(first.expires_on - (time.time() + 3600)) < 5
    assert api.token not in repr(credential)


def test_notebook_tokens_are_refreshed_before_they_expire():
    tokens = iter([jwt(time.time() + 60), jwt(time.time() + 3600)])
    credential = NotebookTokenCredential(lambda audience: next(tokens))
    first = credential.get_token("https://storage.azure.com/.default")
    second = credential.get_token("https://storage.azure.com/.default")
    assert first.token != second.token  # 60 s left is inside the refresh margin


def test_an_opaque_token_gets_a_conservative_lifetime():
    credential = NotebookTokenCredential(lambda audience: "not-a-jwt")
    token = credential.get_token("https://storage.azure.com/.default")
    assert token.token == "not-a-jwt" and token.expires_on <= time.time() + 1800 + 1


def test_scrub_removes_every_token_form():
    token = jwt(time.time())
    text = (
        f"Authorization: Bearer {token}\n{{'authorization': 'Bearer abc.def'}} "
        f"url?sv=2020&sig=s3cr3t%2B&se=1 raw {token}"
    )
    cleaned = scrub(text)
    assert token not in cleaned and "abc.def" not in cleaned and "s3cr3t" not in cleaned
    assert "sv=2020" in cleaned and "se=1" in cleaned


def test_missing_azure_identity_names_the_extra(outside_fabric, monkeypatch):
    monkeypatch.setitem(sys.modules, "azure.identity", None)
    with pytest.raises(ImportError, match=r"openmirror-nb\[azure\]"):
        credentials.resolve_credential()


def test_open_storage_picks_the_backend(tmp_path):
    local = open_storage(parse_target(str(tmp_path / "db")))
    assert (
        isinstance(local, LocalStorage)
        and local.root == (tmp_path / "db" / "Files" / "LandingZone").resolve()
    )
    assert (
        open_files_storage(parse_target(str(tmp_path / "db"))).root == (tmp_path / "db" / "Files").resolve()
    )
    onelake = open_storage(
        parse_target(
            "https://onelake.dfs.fabric.microsoft.com/Sales/orders.MirroredDatabase/Files/LandingZone"
        ),
        credential=StaticTokenCredential(),
    )
    assert onelake.uri("t/x") == (
        "abfss://Sales@onelake.dfs.fabric.microsoft.com/orders.MirroredDatabase/Files/LandingZone/t/x"
    )
    files = open_files_storage(
        parse_target("abfss://Sales@onelake.dfs.fabric.microsoft.com/orders/Files/LandingZone"),
        credential=StaticTokenCredential(),
    )
    assert files.uri("Monitoring/tables.json").endswith("/orders/Files/Monitoring/tables.json")


def test_importing_the_package_loads_neither_azure_nor_sempy():
    code = (
        "import sys, openmirror_nb, openmirror_nb._core.storage.registry, openmirror_nb._core.storage.credentials, "
        "openmirror_nb._core.fabric\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('azure', 'sempy', 'pyspark')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize(
    ("configure", "shown"),
    [
        ("http.setLevel(logging.INFO)", "20 []"),
        ("http.addHandler(mine)", "0 [<StreamHandler <stdout> (NOTSET)>]"),
    ],
)
def test_azure_logs_are_quieted_only_where_nobody_configured_them(configure, shown):
    """In a fresh interpreter (no pytest handlers on the root logger, as in a notebook): before a
    backend is built an Azure warning reaches stderr through Python's last-resort handler; after,
    not, until the user configures logging. A logger the user gave a level or a handler is left
    as it is."""
    code = (
        "import logging, sys\n"
        f"sys.path.insert(0, {str(REPO)!r})\n"
        "from tests.dfs_server import StaticTokenCredential\n"
        "import openmirror_nb._core.storage.adls as adls\n"
        "identity = logging.getLogger('azure.identity')\n"
        "http = logging.getLogger('azure.core.pipeline.policies.http_logging_policy')\n"
        "mine = logging.StreamHandler(sys.stdout)\n"
        f"{configure}\n"  # the user's choice, made before the backend is built
        "identity.warning('imported: shown')\n"
        "adls.AdlsStorage(account_url='https://onelake.dfs.fabric.microsoft.com', file_system='ws',"
        " credential=StaticTokenCredential())\n"
        "identity.warning('built: hidden')\n"
        "print(http.level, http.handlers, [type(h).__name__ for h in identity.handlers])\n"
        "logging.basicConfig(format='%(message)s')\n"
        "identity.warning('configured: shown')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == f"{shown} ['NullHandler']"
    assert done.stderr.splitlines() == ["imported: shown", "configured: shown"]


def test_identity_warnings_of_a_failed_token_request_are_dropped_and_nothing_else(caplog):
    """Around a token request: azure.identity's warnings in this thread wait; a failure drops them
    (its one-line error says the same), a success lets them through. Other threads, lower levels,
    other loggers and the time after the request are untouched."""
    caplog.set_level(logging.INFO)
    chained = logging.getLogger("azure.identity._credentials.chained")
    identity = logging.getLogger("azure.identity")

    def shown() -> list[str]:
        return [r.getMessage() for r in caplog.records]

    with pytest.raises(RuntimeError), credentials.identity_warnings_held():
        chained.warning("the chain failed: dropped")
        identity.error("a credential failed: dropped")
        chained.info("tried a credential: shown")
        logging.getLogger("azure.core").warning("another logger: shown")
        other = threading.Thread(target=lambda: chained.warning("another thread: shown"))
        other.start()
        other.join()
        raise RuntimeError("no token")
    assert shown() == ["tried a credential: shown", "another logger: shown", "another thread: shown"]
    caplog.clear()

    with credentials.identity_warnings_held():
        chained.warning("a token request that worked: shown")
        assert shown() == []  # held until the request returned
    identity.warning("after the request: shown")
    assert shown() == ["a token request that worked: shown", "after the request: shown"]
