"""The storage contract on AdlsStorage: the real Azure SDK against the loopback DFS server over
HTTPS with a bearer token, plus the wire-level promises (conditional rename, leases, paging)."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import azure.storage.filedatalake as sdk
import pytest
from azure.storage.blob import LinearRetry
from azure.storage.filedatalake import (
    DataLakeDirectoryClient,
    DataLakeFileClient,
    DataLakeLeaseClient,
    DataLakeServiceClient,
)

from openmirror_nb._core.errors import (
    LockTimeoutError,
    MissingDependencyError,
    NotSupportedError,
    PathExistsError,
    StorageError,
)
from openmirror_nb._core.storage.adls import AdlsStorage
from openmirror_nb._core.storage.base import LockStatus
from tests.dfs_server import TOKEN, StaticTokenCredential
from tests.storage.conftest import PAGE_SIZE
from tests.storage.contract import StorageContract

REPO = Path(__file__).resolve().parents[2]


def make_storage(dfs, fs: str, **kwargs) -> AdlsStorage:
    options = {
        "account_url": dfs.account_url,
        "file_system": fs,
        "base_path": "mirror.MirroredDatabase/Files/LandingZone",
        "credential": StaticTokenCredential(),
        "connection_verify": str(dfs.cert),
        "lease_seconds": 15,
        "renew_interval": 0.2,
        # no back-off between retries: tests inject 5xx answers and must not wait for them
        "retry_policy": LinearRetry(backoff=0, random_jitter_range=0),
    }
    return AdlsStorage(**{**options, **kwargs})


def sent(dfs, fs: str):
    return [r for r in list(dfs.requests) if r.path == fs or r.path.startswith(fs + "/")]


class NoPipeline:
    """A file-system client shaped like an SDK release without the private ``_pipeline``: every
    other attribute is the real client's, so the SDK's own calls still work."""

    def __init__(self, real) -> None:
        self._real = real

    def __getattr__(self, name: str):
        if name == "_pipeline":
            raise AttributeError(name)
        return getattr(self._real, name)


@pytest.fixture
def no_pipeline(monkeypatch):
    """Backends built while this is active see a file-system client without ``_pipeline``."""
    real = DataLakeServiceClient.get_file_system_client
    monkeypatch.setattr(
        DataLakeServiceClient, "get_file_system_client", lambda self, name: NoPipeline(real(self, name))
    )


class TestAdlsStorage(StorageContract):
    @pytest.fixture
    def storage(self, dfs, fs):
        return make_storage(dfs, fs)

    @pytest.fixture
    def second_storage(self, dfs, fs):
        return make_storage(dfs, fs)

    @pytest.fixture
    def storage_source(self, dfs, fs):
        return (
            f"import sys\nsys.path.insert(0, {str(REPO)!r})\n"
            "from tests.dfs_server import StaticTokenCredential\n"
            "from openmirror_nb._core.storage.adls import AdlsStorage\n"
            f"storage = AdlsStorage(account_url={dfs.account_url!r}, file_system={fs!r}, "
            "base_path='mirror.MirroredDatabase/Files/LandingZone', credential=StaticTokenCredential(), "
            f"connection_verify={str(dfs.cert)!r}, lease_seconds=15)\n"
        )

    @pytest.fixture
    def expire_locks(self, dfs):
        return lambda: dfs.advance(16)  # past the 15 s lease, without waiting

    @pytest.fixture
    def fail_next_publish(self, dfs, fs):
        return lambda: dfs.inject(lambda r: r.path.startswith(fs) and "x-ms-rename-source" in r.headers)


class TestAdlsStorageViaPublicRename(TestAdlsStorage):
    """The whole contract again on the fallback for an SDK without ``_pipeline``: the public
    ``rename_file`` / ``rename_directory`` with ``MatchConditions.IfMissing``."""

    @pytest.fixture
    def storage(self, dfs, fs, no_pipeline):
        storage = make_storage(dfs, fs)
        assert storage._renamer.via == "sdk"
        return storage

    @pytest.fixture
    def second_storage(self, dfs, fs, no_pipeline):
        return make_storage(dfs, fs)

    # Locks across processes rename nothing; the class above covers them.
    test_lock_excludes_another_process = None
    test_lock_of_a_killed_process_is_taken_over = None


def test_publish_is_one_conditional_rename_and_never_overwrites(dfs, fs):
    storage = make_storage(dfs, fs)
    storage.write_bytes("t/00000000000000000001.parquet", b"one")
    storage.write_bytes("t/_stage/part", b"two")
    with pytest.raises(PathExistsError):
        storage.rename("t/_stage/part", "t/00000000000000000001.parquet")
    with pytest.raises(PathExistsError):
        storage.write_bytes("t/00000000000000000001.parquet", b"three")
    storage.rename("t/_stage/part", "t/00000000000000000002.parquet")
    renames = [r for r in sent(dfs, fs) if "x-ms-rename-source" in r.headers]
    assert len(renames) == 5
    for r in renames:
        assert r.method == "PUT" and r.headers["if-none-match"] == "*"
        assert "mode" not in r.query  # the raw REST rename, not rename_file's mode=legacy
        assert r.headers["x-ms-rename-source"].startswith(
            f"/{fs}/mirror.MirroredDatabase/Files/LandingZone/t/"
        )
    assert [r.status for r in renames] == [201, 201, 409, 409, 201]
    assert not [p for p in dfs.store.overwrites if p.startswith(fs)]
    assert all(r.headers["authorization"] == "Bearer ***" for r in sent(dfs, fs))


def test_overwrite_is_an_unconditional_rename(dfs, fs):
    storage = make_storage(dfs, fs)
    storage.write_bytes("t/_metadata.json", b"{}")
    storage.write_bytes("t/_metadata.json", b'{"a": 1}', overwrite=True)
    renames = [r for r in sent(dfs, fs) if "x-ms-rename-source" in r.headers]
    assert "if-none-match" in renames[0].headers and "if-none-match" not in renames[1].headers


def test_listing_follows_continuation_tokens(dfs, fs):
    storage = make_storage(dfs, fs)
    for i in range(PAGE_SIZE * 2 + 1):
        storage.write_bytes(f"t/f{i:02d}", b"x")
    assert len(storage.list_dir("t")) == PAGE_SIZE * 2 + 1
    listings = [r for r in sent(dfs, fs) if r.query.get("resource") == "filesystem"]
    assert [("continuation" in r.query) for r in listings] == [False, True, True]


def test_a_lost_rename_answer_is_recognised_on_retry(dfs, fs):
    storage = make_storage(dfs, fs)
    dfs.inject(lambda r: r.path.startswith(fs) and "x-ms-rename-source" in r.headers, status=500, after=True)
    storage.write_bytes("t/00000000000000000001.parquet", b"once")
    assert storage.read_bytes("t/00000000000000000001.parquet") == b"once"
    retried = [r.status for r in sent(dfs, fs) if "x-ms-rename-source" in r.headers]
    assert retried[0] == 500 and retried[1] in (404, 409)


def test_lease_is_renewed_while_held(dfs, fs):
    holder, other = make_storage(dfs, fs, renew_interval=0.05), make_storage(dfs, fs)

    def renewals() -> int:
        return sum(
            1 for r in sent(dfs, fs) if r.headers.get("x-ms-lease-action") == "renew" and r.status == 200
        )

    def wait_for_renewal(after: int) -> None:
        deadline = time.monotonic() + 30
        while renewals() <= after:
            assert time.monotonic() < deadline, "the lease was never renewed"
            time.sleep(0.01)

    with holder.lock("orders", timeout=5):
        for _ in range(3):  # 30 s of server time pass; the 15 s lease survives by renewal
            wait_for_renewal(renewals())
            dfs.advance(10)
        wait_for_renewal(renewals())
        with pytest.raises(LockTimeoutError):
            with other.lock("orders", timeout=0.2):
                pass
    with other.lock("orders", timeout=1):
        pass


def _raw_lock_file(dfs, fs):
    """The lock file of table ``orders``, through a client of its own (another process's)."""
    return (
        DataLakeServiceClient(
            dfs.account_url, credential=StaticTokenCredential(), connection_verify=str(dfs.cert)
        )
        .get_file_system_client(fs)
        .get_file_client("mirror.MirroredDatabase/Files/LandingZone/_openmirror/locks/orders.lock")
    )


def test_an_abandoned_lease_blocks_until_it_expires(dfs, fs):
    storage = make_storage(dfs, fs)
    lock_file = _raw_lock_file(dfs, fs)
    lock_file.create_file()  # a lock file left by earlier locks
    DataLakeLeaseClient(lock_file).acquire(lease_duration=15)  # a holder that died: no renewals
    with pytest.raises(LockTimeoutError, match="lapses within 15 s"):
        with storage.lock("orders", timeout=0.3):
            pass
    dfs.advance(16)
    with storage.lock("orders", timeout=5):
        pass


def test_a_lost_lease_is_reported_to_the_holder(dfs, fs):
    storage = make_storage(dfs, fs, renew_interval=0.05)
    lock_file = _raw_lock_file(dfs, fs)
    with pytest.raises(StorageError, match="lapsed while held"):
        with storage.lock("orders", timeout=5):
            DataLakeLeaseClient(lock_file).break_lease(lease_break_period=0)
            deadline = time.monotonic() + 30
            while not any(
                r.status == 409 and r.headers.get("x-ms-lease-action") == "renew" for r in sent(dfs, fs)
            ):
                assert time.monotonic() < deadline
                time.sleep(0.01)


def test_leased_paths_refuse_writes_without_the_lease(dfs, fs):
    client = DataLakeServiceClient(
        dfs.account_url, credential=StaticTokenCredential(), connection_verify=str(dfs.cert)
    )
    file = client.get_file_system_client(fs).get_file_client("x/leased")
    file.create_file()
    lease = DataLakeLeaseClient(file)
    lease.acquire(lease_duration=15)
    for attempt in (
        lambda: file.delete_file(),
        lambda: file.create_file(),
        lambda: file.append_data(b"1", 0, 1),
    ):
        with pytest.raises(Exception) as caught:
            attempt()
        assert "LeaseIdMissing" in str(caught.value)
    file.delete_file(lease=lease)


def test_sdk_rename_file_also_works_against_the_server(dfs, fs):
    from azure.core import MatchConditions

    client = DataLakeServiceClient(
        dfs.account_url, credential=StaticTokenCredential(), connection_verify=str(dfs.cert)
    )
    fsc = client.get_file_system_client(fs)
    fsc.get_file_client("a/src").create_file()
    fsc.get_file_client("a/taken").create_file()
    with pytest.raises(Exception, match="PathAlreadyExists"):
        fsc.get_file_client("a/src").rename_file(f"{fs}/a/taken", match_condition=MatchConditions.IfMissing)
    fsc.get_file_client("a/src").rename_file(f"{fs}/a/dst", match_condition=MatchConditions.IfMissing)
    assert [r.query.get("mode") for r in sent(dfs, fs) if "x-ms-rename-source" in r.headers] == ["legacy"] * 2


def test_uploads_run_in_parallel(dfs, fs, tmp_path):
    storage = make_storage(dfs, fs)
    pairs = []
    for i in range(16):
        (tmp_path / f"p{i}").write_bytes(b"x" * 100)
        pairs.append((str(tmp_path / f"p{i}"), f"t/_openmirror/staging/p/part-{i}"))
    dfs.max_in_flight = 0
    dfs.latency = 0.02
    try:
        storage.upload_files(pairs, parallelism=8)
    finally:
        dfs.latency = 0.0
    assert dfs.max_in_flight > 1
    assert len(storage.list_dir("t/_openmirror/staging/p")) == 16


def test_a_wrong_token_is_refused_and_never_shown(dfs, fs):
    secret = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.c2VjcmV0LXRva2Vu"
    storage = make_storage(dfs, fs, credential=StaticTokenCredential(secret))
    with pytest.raises(StorageError) as caught:
        storage.write_bytes("t/a", b"1")
    assert "401" in str(caught.value) and secret not in str(caught.value) and TOKEN not in str(caught.value)
    assert "credential" in str(caught.value)


def test_spark_writes_directly_only_inside_fabric(dfs, fs, monkeypatch):
    monkeypatch.delenv("FABRIC_RUNTIME_VERSION", raising=False)
    monkeypatch.delenv("MSNOTEBOOKUTILS_VERSION", raising=False)
    monkeypatch.delenv("SPARK_CLUSTER_NAME", raising=False)
    assert make_storage(dfs, fs).SPARK_WRITABLE is False
    monkeypatch.setenv("FABRIC_RUNTIME_VERSION", "1.3")
    assert make_storage(dfs, fs).SPARK_WRITABLE is True


def test_uri_is_the_abfss_url(dfs, fs):
    storage = make_storage(dfs, fs)
    host = dfs.account_url.split("/")[2]
    assert storage.uri("t/x") == f"abfss://{fs}@{host}/mirror.MirroredDatabase/Files/LandingZone/t/x"
    assert repr(storage) == f"AdlsStorage('abfss://{fs}@{host}/mirror.MirroredDatabase/Files/LandingZone')"


def test_lease_duration_outside_the_service_range_is_refused(dfs, fs):
    with pytest.raises(StorageError, match="15-60"):
        make_storage(dfs, fs, lease_seconds=5)


def test_missing_sdk_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "azure.storage.filedatalake", None)
    with pytest.raises(MissingDependencyError, match=r"openmirror-nb\[azure\]"):
        AdlsStorage(
            account_url="https://onelake.dfs.fabric.microsoft.com", file_system="ws", credential=object()
        )


def test_threads_share_one_storage_safely(dfs, fs):
    storage = make_storage(dfs, fs)
    errors = []

    def work(i: int) -> None:
        try:
            storage.write_bytes(f"t/{i}", str(i).encode())
        except Exception as exc:  # collected, asserted below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(storage.list_dir("t")) == 12


def test_move_folder_is_one_conditional_rename(dfs, fs):
    storage = make_storage(dfs, fs)
    for i in range(3):
        storage.write_bytes(f"t/sub/f{i}", b"x")
    before = len(sent(dfs, fs))
    storage.move_folder("t", "trash/t-1")
    moves = sent(dfs, fs)[before:]
    renames = [r for r in moves if "x-ms-rename-source" in r.headers]
    # One existence check, the rename, the trash folder it needed, the rename again.
    assert [r.method for r in moves] == ["HEAD", "PUT", "PUT", "PUT"]
    assert [r.status for r in renames] == [404, 201]
    for r in renames:
        assert r.path == f"{fs}/mirror.MirroredDatabase/Files/LandingZone/trash/t-1"
        assert r.headers["x-ms-rename-source"] == f"/{fs}/mirror.MirroredDatabase/Files/LandingZone/t"
        assert r.headers["if-none-match"] == "*" and "mode" not in r.query
    assert [rel for rel, _ in storage.walk_files("")] == [f"trash/t-1/sub/f{i}" for i in range(3)]


def test_a_lost_folder_move_answer_is_recognised_on_retry(dfs, fs):
    storage = make_storage(dfs, fs)
    storage.write_bytes("t/f", b"1")
    storage.write_bytes("trash/keep", b"k")
    before = len(sent(dfs, fs))
    dfs.inject(lambda r: r.path.startswith(fs) and "x-ms-rename-source" in r.headers, status=500, after=True)
    storage.move_folder("t", "trash/t")
    assert storage.read_bytes("trash/t/f") == b"1" and not storage.exists("t")
    retried = [r.status for r in sent(dfs, fs)[before:] if "x-ms-rename-source" in r.headers]
    assert retried[0] == 500 and retried[1:] in ([404], [409])  # the source is gone, the destination taken


def test_lock_status_is_one_properties_request_and_takes_nothing(dfs, fs):
    storage, other = make_storage(dfs, fs), make_storage(dfs, fs)
    with storage.lock("orders", timeout=5):
        recorded = [r for r in sent(dfs, fs) if r.query.get("comp") == "metadata"]
        assert len(recorded) == 1 and recorded[0].headers.get("x-ms-lease-id")  # set under the lease
        before = len(sent(dfs, fs))
        status = other.lock_status("orders")
        asked = sent(dfs, fs)[before:]
        assert [r.method for r in asked] == ["HEAD"] and "x-ms-lease-action" not in asked[0].headers
        assert status.held and status.holder and status.holder.endswith(f":{os.getpid()}")


def test_lock_status_of_a_lapsed_lease_keeps_the_last_holder(dfs, fs):
    storage = make_storage(dfs, fs)
    lock_file = _raw_lock_file(dfs, fs)
    lock_file.create_file()  # not the first use: the lock file and its holder record stay
    with storage.lock("orders", timeout=5):
        pass
    DataLakeLeaseClient(lock_file).acquire(lease_duration=15)  # a holder that died without renewing
    assert storage.lock_status("orders").held
    dfs.advance(16)
    status = storage.lock_status("orders")
    assert not status.held and status.holder and status.holder.endswith(f":{os.getpid()}")


def test_a_failed_holder_record_does_not_fail_the_lock(dfs, fs):
    storage, other = make_storage(dfs, fs), make_storage(dfs, fs)
    dfs.inject(lambda r: r.path.startswith(fs) and r.query.get("comp") == "metadata")
    with storage.lock("orders", timeout=5):
        assert other.lock_status("orders") == LockStatus(held=True)
    with other.lock("orders", timeout=1):
        pass


def test_without_the_private_pipeline_renames_use_the_public_sdk(dfs, fs, no_pipeline):
    storage = make_storage(dfs, fs)
    assert storage._renamer.via == "sdk"
    storage.write_bytes("t/00000000000000000001.parquet", b"one")
    storage.write_bytes("t/_stage/part", b"two")
    with pytest.raises(PathExistsError, match="00000000000000000001"):
        storage.rename("t/_stage/part", "t/00000000000000000001.parquet")
    assert storage.read_bytes("t/00000000000000000001.parquet") == b"one"
    storage.rename("t/_stage/part", "t/00000000000000000002.parquet")
    storage.move_folder("t", "trash/t")
    assert [rel for rel, _ in storage.walk_files("")] == [
        "trash/t/00000000000000000001.parquet",
        "trash/t/00000000000000000002.parquet",
    ]
    storage.write_bytes("later/t/f", b"3")
    with pytest.raises(PathExistsError, match="trash/t"):
        storage.move_folder("later/t", "trash/t")
    assert storage.read_bytes("later/t/f") == b"3"
    renames = [r for r in sent(dfs, fs) if "x-ms-rename-source" in r.headers]
    root = f"{fs}/mirror.MirroredDatabase/Files/LandingZone/"
    last = {
        (r.headers["x-ms-rename-source"].removeprefix(f"/{root}"), r.path.removeprefix(root)): r.status
        for r in renames
    }
    # The last answer to each rename asked for (a move is retried once the missing parent is made):
    # every call above is in the list, each write's publishing one too, so the check below sees them.
    assert {pair: status for pair, status in last.items() if not pair[0].endswith(".tmp")} == {
        ("t/_stage/part", "t/00000000000000000001.parquet"): 409,
        ("t/_stage/part", "t/00000000000000000002.parquet"): 201,
        ("t", "trash/t"): 201,
        ("later/t", "trash/t"): 409,
    }
    assert sorted(dst for src, dst in last if src.endswith(".tmp")) == [
        "later/t/f",
        "t/00000000000000000001.parquet",
        "t/_stage/part",
    ]
    assert all(r.query.get("mode") == "legacy" and r.headers["if-none-match"] == "*" for r in renames)
    assert not [p for p in dfs.store.overwrites if p.startswith(fs)]


def test_without_pipeline_or_public_rename_the_backend_is_refused(dfs, fs, no_pipeline, monkeypatch):
    monkeypatch.delattr(DataLakeFileClient, "rename_file")
    monkeypatch.delattr(DataLakeDirectoryClient, "rename_directory")
    with pytest.raises(NotSupportedError) as caught:
        make_storage(dfs, fs)
    message = str(caught.value)
    assert f"azure-storage-file-datalake {sdk.__version__}" in message and "pip install" in message
    assert TOKEN not in message
    assert sent(dfs, fs) == [] and dfs.store.fs[fs] == {}


def test_a_lock_file_made_by_its_first_use_goes_again(dfs, fs):
    """A push rejected before it publishes leaves the landing zone as it was, lock file included;
    a lock file that was there already stays."""
    storage = make_storage(dfs, fs)
    with storage.lock("orders", timeout=5):
        assert storage.lock_status("orders").held
    assert not storage.exists("_openmirror/locks/orders.lock")
    storage.write_bytes("_openmirror/locks/orders.lock", b"")
    with storage.lock("orders", timeout=5):
        pass
    assert storage.exists("_openmirror/locks/orders.lock")
