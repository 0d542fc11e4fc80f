"""Fixtures shared by the OneLake storage tests: the loopback DFS server and a fresh filesystem."""

from __future__ import annotations

import uuid

import pytest

from tests.dfs_server import start_server

PAGE_SIZE = 7  # small, so every listing above follows x-ms-continuation


@pytest.fixture(scope="session")
def dfs(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NO_PROXY", "127.0.0.1,localhost")  # loopback only, even where a proxy is configured
        server, cert = start_server(tmp_path_factory.mktemp("dfs"))
        server.page_size = PAGE_SIZE
        server.cert = cert
        yield server
        server.close()


@pytest.fixture
def fs(dfs):
    name = f"ws-{uuid.uuid4().hex[:12]}"
    dfs.create_filesystem(name)
    return name


@pytest.fixture
def dfs_auth(dfs):
    """The shared server, with its accepted tokens, refusal, challenge and triggers put back
    after the test."""
    tokens = set(dfs.tokens)
    yield dfs
    dfs.tokens, dfs.refusing, dfs.challenge = tokens, None, False
    with dfs.store.lock:
        dfs._triggers.clear()
