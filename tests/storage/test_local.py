"""The storage contract on the local backend (locks across processes are real ``flock`` locks)."""

from __future__ import annotations

import pytest

from openmirror_nb._core.storage import local
from openmirror_nb._core.storage.local import LocalStorage
from tests.storage.contract import StorageContract


class TestLocalStorage(StorageContract):
    @pytest.fixture
    def storage(self, tmp_path):
        return LocalStorage(tmp_path / "Files" / "LandingZone")

    @pytest.fixture
    def second_storage(self, storage):
        return LocalStorage(storage.root)

    @pytest.fixture
    def storage_source(self, storage):
        return f"from openmirror_nb._core.storage.local import LocalStorage\nstorage = LocalStorage({str(storage.root)!r})\n"

    @pytest.fixture
    def expire_locks(self):
        return lambda: None  # the kernel releases a dead process's flock

    @pytest.fixture
    def fail_next_publish(self, monkeypatch):
        def arm() -> None:
            def broken_link(src, dst):
                monkeypatch.undo()
                raise OSError(5, "Input/output error (injected)")

            monkeypatch.setattr(local.os, "link", broken_link)

        return arm

    def test_uri_is_a_file_url(self, storage):
        assert storage.uri("t/x").startswith("file:///")
