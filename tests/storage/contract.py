"""The storage contract every backend passes: ``StorageContract`` is subclassed per backend.

A subclass provides these fixtures:
    storage           a fresh, empty store
    second_storage    another instance on the same root (another client, same data)
    storage_source    Python source that builds the same store as ``storage`` in a new process
    expire_locks      a callable making locks of dead holders lapse (no-op where the OS frees them)
    fail_next_publish a callable making the next publish step (rename/link) of a write fail
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from openmirror_nb._core.errors import LockTimeoutError, PathExistsError, StorageError
from openmirror_nb._core.landing_zone import data_file_name, scan
from openmirror_nb._core.storage.base import Entry, LockStatus

LOCK_PROBE = """
import sys
from openmirror_nb._core.errors import LockTimeoutError
try:
    with storage.lock("orders", timeout=float(sys.argv[1])):
        print("acquired", flush=True)
except LockTimeoutError:
    print("timeout", flush=True)
"""

LOCK_HOLDER = """
import time
with storage.lock("orders", timeout=30):
    print("held", flush=True)
    time.sleep(600)
"""


def run_script(source: str, script: str, *args: str) -> subprocess.Popen[str]:
    code = textwrap.dedent(source) + textwrap.dedent(script)
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )


def probe_lock(source: str, timeout: float) -> str:
    proc = run_script(source, LOCK_PROBE, str(timeout))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return out.strip()


def files_in(storage, folder: str) -> list[str]:
    return [e.name for e in storage.list_dir(folder)]


META = b'{"keyColumns": ["id"]}'
LAST_UPDATE_META = b'{"keyColumns":["id"],"fileDetectionStrategy":"LastUpdateTimeFileDetection"}'


def seq(n: int, extension: str = "parquet") -> str:
    return data_file_name(n, extension)


def lay_out(storage, files: dict[str, bytes]) -> None:
    """A crafted landing zone: every path (relative to the root) with its bytes."""
    for path, data in files.items():
        storage.write_bytes(path, data)


def data(folder: str, *numbers: int) -> dict[str, bytes]:
    """Non-empty data files ``folder/<20 digits>.parquet`` for ``numbers``."""
    return {f"{folder}/{seq(n)}": f"rows of {n}".encode() for n in numbers}


def names(files) -> list[str]:
    return [f.name for f in files]


def kinds(result) -> list[tuple[str, str | None]]:
    return [(b.kind, b.file) for b in result.blockers]


def message(result, kind: str) -> str:
    (found,) = [b.message for b in result.blockers if b.kind == kind]
    return found


class StorageContract:
    # complete-or-absent, no-clobber writes

    def test_write_then_read_creates_parents(self, storage):
        storage.write_bytes("a/b/c.bin", b"\x00\x01payload")
        storage.write_bytes("a/empty", b"")
        assert storage.read_bytes("a/b/c.bin") == b"\x00\x01payload"
        assert storage.read_bytes("a/empty") == b""

    def test_read_missing_raises_file_not_found(self, storage):
        with pytest.raises(FileNotFoundError):
            storage.read_bytes("nope/missing.json")

    def test_write_refuses_existing_and_keeps_its_bytes(self, storage):
        storage.write_bytes("t/00000000000000000001.parquet", b"first")
        with pytest.raises(PathExistsError):
            storage.write_bytes("t/00000000000000000001.parquet", b"second")
        assert storage.read_bytes("t/00000000000000000001.parquet") == b"first"
        assert files_in(storage, "t") == ["00000000000000000001.parquet"]

    def test_write_with_overwrite_replaces(self, storage):
        storage.write_bytes("t/_metadata.json", b"{}")
        storage.write_bytes("t/_metadata.json", b'{"keyColumns": ["id"]}', overwrite=True)
        assert storage.read_bytes("t/_metadata.json") == b'{"keyColumns": ["id"]}'
        assert files_in(storage, "t") == ["_metadata.json"]

    def test_failed_publish_leaves_nothing_behind(self, storage, fail_next_publish):
        storage.write_bytes("t/keep", b"k")
        fail_next_publish()
        with pytest.raises((StorageError, OSError)):
            storage.write_bytes("t/00000000000000000001.parquet", b"half")
        assert not storage.exists("t/00000000000000000001.parquet")
        assert files_in(storage, "t") == ["keep"]

    # listing and existence

    def test_exists_for_files_folders_and_missing(self, storage):
        storage.write_bytes("x/y/z", b"1")
        assert storage.exists("x/y/z") and storage.exists("x/y") and storage.exists("x")
        assert not storage.exists("x/q") and not storage.exists("nothing")

    def test_list_dir_gives_direct_children(self, storage):
        storage.write_bytes("t/b.parquet", b"12345")
        storage.write_bytes("t/a.parquet", b"1")
        storage.write_bytes("t/_ProcessedFiles/00000000000000000001.parquet", b"123")
        entries = storage.list_dir("t")
        assert [(e.name, e.is_dir, e.size) for e in entries] == [
            ("_ProcessedFiles", True, 0),
            ("a.parquet", False, 1),
            ("b.parquet", False, 5),
        ]
        assert all(isinstance(e, Entry) and e.mtime > 0 for e in entries)

    def test_list_dir_of_absent_folder_is_empty(self, storage):
        assert storage.list_dir("no/such/folder") == []

    def test_list_dir_returns_more_entries_than_a_page(self, storage):
        names = [f"{n:020d}.parquet" for n in range(1, 26)]
        for name in names:
            storage.write_bytes(f"big/{name}", b"x")
        assert files_in(storage, "big") == names
        assert [rel for rel, _ in storage.walk_files("big")] == [f"big/{n}" for n in names]

    def test_root_listing(self, storage):
        storage.write_bytes("t1/f", b"1")
        storage.write_bytes("t2.schema/t/f", b"1")
        assert {"t1", "t2.schema"} <= set(files_in(storage, ""))

    def test_path_outside_the_root_is_refused(self, storage):
        with pytest.raises(StorageError):
            storage.write_bytes("../escape", b"x")

    # renames

    def test_rename_moves_and_creates_the_destination_folder(self, storage):
        storage.write_bytes("t/_openmirror/staging/p/part-0", b"part")
        storage.rename("t/_openmirror/staging/p/part-0", "t/new/00000000000000000001.parquet")
        assert storage.read_bytes("t/new/00000000000000000001.parquet") == b"part"
        assert not storage.exists("t/_openmirror/staging/p/part-0")

    def test_rename_refuses_a_taken_destination(self, storage):
        storage.write_bytes("t/00000000000000000007.parquet", b"published")
        storage.write_bytes("t/_stage/part", b"late")
        with pytest.raises(PathExistsError):
            storage.rename("t/_stage/part", "t/00000000000000000007.parquet")
        assert storage.read_bytes("t/00000000000000000007.parquet") == b"published"
        assert storage.read_bytes("t/_stage/part") == b"late"

    def test_rename_of_missing_source_fails(self, storage):
        with pytest.raises(StorageError):
            storage.rename("t/_stage/none", "t/00000000000000000001.parquet")
        assert not storage.exists("t/00000000000000000001.parquet")

    def test_concurrent_renames_to_one_name_have_one_winner(self, storage, second_storage):
        writers = 8
        for i in range(writers):
            storage.write_bytes(f"t/_stage/w{i}", f"writer {i}".encode())
        start, outcome = threading.Barrier(writers), {}

        def publish(i: int) -> None:
            store = storage if i % 2 else second_storage
            start.wait()
            try:
                store.rename(f"t/_stage/w{i}", "t/00000000000000000001.parquet")
                outcome[i] = "won"
            except PathExistsError:
                outcome[i] = "taken"

        threads = [threading.Thread(target=publish, args=(i,)) for i in range(writers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        winners = [i for i, result in outcome.items() if result == "won"]
        assert len(outcome) == writers and len(winners) == 1
        assert storage.read_bytes("t/00000000000000000001.parquet") == f"writer {winners[0]}".encode()
        assert sorted(files_in(storage, "t/_stage")) == sorted(
            f"w{i}" for i in range(writers) if i != winners[0]
        )

    # folder moves

    def test_move_folder_moves_the_whole_tree(self, storage):
        tree = {
            "a.parquet": b"a",
            "_openmirror/staging/p/part": b"part",
            "sub/deep/f": b"\x00d",
            "empty": b"",
        }
        for rel, data in tree.items():
            storage.write_bytes(f"t/{rel}", data)
        storage.write_bytes("trash/earlier/f", b"e")
        storage.move_folder("t", "trash/t-1")
        assert not storage.exists("t") and files_in(storage, "") == ["trash"]
        moved = {rel: storage.read_bytes(rel) for rel, _ in storage.walk_files("trash/t-1")}
        assert moved == {f"trash/t-1/{rel}": data for rel, data in tree.items()}
        assert storage.read_bytes("trash/earlier/f") == b"e"

    def test_move_folder_refuses_an_existing_destination(self, storage):
        storage.write_bytes("t/f", b"new")
        storage.write_bytes("trash/t/g", b"old")
        storage.write_bytes("trash/file", b"a file")
        for taken in ("trash/t", "trash/file"):
            with pytest.raises(PathExistsError, match=taken):
                storage.move_folder("t", taken)
        assert [rel for rel, _ in storage.walk_files("")] == ["t/f", "trash/file", "trash/t/g"]
        assert storage.read_bytes("trash/t/g") == b"old" and storage.read_bytes("t/f") == b"new"

    def test_move_folder_of_a_missing_folder_fails(self, storage):
        storage.write_bytes("t/f", b"1")
        with pytest.raises(StorageError, match="gone") as caught:
            storage.move_folder("t/gone", "trash/gone")
        assert not isinstance(caught.value, PathExistsError)
        assert not storage.exists("trash") and storage.read_bytes("t/f") == b"1"

    def test_move_folder_creates_the_destination_parents(self, storage):
        storage.write_bytes("t/x/f", b"1")
        storage.move_folder("t/x", "trash/2024/01/x")
        assert storage.read_bytes("trash/2024/01/x/f") == b"1"
        assert not storage.exists("t/x") and storage.exists("t")

    # deletes

    def test_delete_file_folder_and_missing(self, storage):
        storage.write_bytes("t/a", b"1")
        storage.write_bytes("u/v/w", b"1")
        storage.delete("t/a")
        storage.delete("u")
        storage.delete("never/was")
        assert not storage.exists("t/a") and not storage.exists("u")

    def test_non_recursive_delete_keeps_a_non_empty_folder(self, storage):
        storage.write_bytes("t/_openmirror/staging/p/part", b"1")
        storage.delete("t/_openmirror/staging/p", recursive=False)
        assert storage.read_bytes("t/_openmirror/staging/p/part") == b"1"
        storage.delete("t/_openmirror/staging/p/part")
        storage.delete("t/_openmirror/staging/p", recursive=False)
        assert not storage.exists("t/_openmirror/staging/p")

    # locks

    def test_lock_excludes_another_instance(self, storage, second_storage):
        with storage.lock("orders", timeout=5):
            with pytest.raises(LockTimeoutError, match="orders"):
                with second_storage.lock("orders", timeout=0.2):
                    pass
            with second_storage.lock("customers", timeout=5):
                pass  # other names are independent
        with second_storage.lock("orders", timeout=5):
            pass

    def test_lock_serialises_threads(self, storage, second_storage):
        storage.write_bytes("counter", b"0")

        def bump(store) -> None:
            for _ in range(3):
                with store.lock("counter", timeout=60):
                    value = int(store.read_bytes("counter"))
                    store.write_bytes("counter", str(value + 1).encode(), overwrite=True)

        threads = [threading.Thread(target=bump, args=(s,)) for s in (storage, second_storage) * 2]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert storage.read_bytes("counter") == b"12"

    def test_lock_is_released_when_the_block_raises(self, storage, second_storage):
        with pytest.raises(RuntimeError):
            with storage.lock("orders", timeout=5):
                raise RuntimeError("push failed")
        with second_storage.lock("orders", timeout=0.5):
            pass

    def test_lock_excludes_another_process(self, storage, storage_source):
        with storage.lock("orders", timeout=5):
            assert probe_lock(storage_source, 0.3) == "timeout"
        assert probe_lock(storage_source, 30) == "acquired"

    def test_lock_of_a_killed_process_is_taken_over(self, storage, storage_source, expire_locks):
        holder = run_script(storage_source, LOCK_HOLDER)
        try:
            assert holder.stdout.readline().strip() == "held", holder.stderr.read()
            # While it holds the lock, status and a timed-out waiter both name it.
            status = storage.lock_status("orders")
            assert status.held and status.holder and status.holder.endswith(f":{holder.pid}")
            with pytest.raises(LockTimeoutError, match=f"held by .*:{holder.pid}"):
                with storage.lock("orders", timeout=0.2):
                    pass
        finally:
            os.kill(holder.pid, signal.SIGKILL)
            holder.communicate(timeout=60)
        expire_locks()
        assert not storage.lock_status("orders").held
        with storage.lock("orders", timeout=30):
            pass

    def test_lock_status_before_while_and_after_holding(self, storage, second_storage):
        assert storage.lock_status("orders") == LockStatus(held=False)
        took = time.time()
        with storage.lock("orders", timeout=5):
            for store in (second_storage, storage):  # another client, and the holder itself
                status = store.lock_status("orders")
                assert status.held and status.holder and status.holder.endswith(f":{os.getpid()}")
                assert status.since is not None and abs(status.since - took) < 30
            assert not second_storage.lock_status("customers").held
            with pytest.raises(LockTimeoutError, match=f"held by .*:{os.getpid()}"):
                with second_storage.lock("orders", timeout=0.2):
                    pass
        assert not storage.lock_status("orders").held
        with second_storage.lock("orders", timeout=0.5):
            pass  # reading the status never took the lock

    # bulk upload and walking

    def test_upload_files_puts_every_file(self, storage, tmp_path):
        pairs = []
        for i in range(30):
            local = Path(tmp_path, f"part-{i:05d}.parquet")
            local.write_bytes(bytes([i]) * (i + 1))
            pairs.append((str(local), f"t/_openmirror/staging/p/part-{i:05d}.parquet"))
        storage.upload_files(pairs, parallelism=8)
        for i in range(30):
            assert storage.read_bytes(f"t/_openmirror/staging/p/part-{i:05d}.parquet") == bytes([i]) * (i + 1)
        assert len(files_in(storage, "t/_openmirror/staging/p")) == 30

    def test_upload_files_never_replaces_and_stays_complete_or_absent(self, storage, tmp_path):
        storage.write_bytes("t/part-9", b"already here")
        pairs = []
        for i in range(10):
            local = Path(tmp_path, f"p{i}")
            local.write_bytes(f"new {i}".encode())
            pairs.append((str(local), f"t/part-{i}"))
        with pytest.raises(PathExistsError):
            storage.upload_files(pairs, parallelism=4)
        assert storage.read_bytes("t/part-9") == b"already here"
        for i in range(9):
            if storage.exists(f"t/part-{i}"):
                assert storage.read_bytes(f"t/part-{i}") == f"new {i}".encode()
        assert all(not name.startswith("_") for name in files_in(storage, "t"))

    def test_walk_files_is_depth_first_and_sorted(self, storage):
        for path in ["t/b", "t/a/z", "t/a/y/x", "t/a.b", "t/c/d", "u/e"]:
            storage.write_bytes(path, path.encode())
        walked = list(storage.walk_files("t"))
        assert [rel for rel, _ in walked] == ["t/a/y/x", "t/a/z", "t/a.b", "t/b", "t/c/d"]
        first = walked[0][1]
        assert (first.name, first.size, first.is_dir) == ("x", 7, False)
        assert [rel for rel, _ in storage.walk_files("")][-1] == "u/e"
        assert list(storage.walk_files("missing")) == []

    def test_abilities_and_uri(self, storage):
        assert storage.ATOMIC_RENAME is True
        assert isinstance(storage.SPARK_WRITABLE, bool)
        assert storage.uri("t/00000000000000000001.parquet").endswith("/t/00000000000000000001.parquet")

    # scan: what a table folder holds and what keeps it from replicating (contract §1, §3.3, §6)

    def test_scan_of_a_clean_table(self, storage):
        lay_out(storage, {"t/_metadata.json": META, **data("t", 1, 2, 3)})
        result = scan(storage, "t")
        assert (result.table, result.folder, result.exists) == ("t", "t", True)
        assert result.metadata is not None and result.metadata.key_columns == ("id",)
        assert result.state is None and not result.lock.held
        assert names(result.pending) == [seq(1), seq(2), seq(3)]
        assert [(f.sequence, f.size, f.place) for f in result.pending] == [
            (1, 9, ""),
            (2, 9, ""),
            (3, 9, ""),
        ]
        assert result.newest_processed is None
        assert result.processed == () and result.ready_to_delete == ()
        assert result.last_sequence == 3
        assert result.blockers == () and not result.blocked

    def test_scan_knows_the_newest_processed_file_the_service_keeps(self, storage):
        lay_out(
            storage,
            {
                "t/_metadata.json": META,
                f"t/_FilesReadyToDelete/{seq(1)}": b"one",
                f"t/_ProcessedFiles/{seq(2)}": b"two",
                f"t/_ProcessedFiles/{seq(3)}": b"three",
                **data("t", 4, 5, 6),
            },
        )
        result = scan(storage, "t")
        assert names(result.pending) == [seq(5), seq(6)]
        assert result.newest_processed is not None
        assert (result.newest_processed.name, result.newest_processed.place) == (seq(4), "")
        assert [(f.name, f.place) for f in result.processed] == [
            (seq(2), "_ProcessedFiles"),
            (seq(3), "_ProcessedFiles"),
        ]
        assert [(f.name, f.sequence, f.place) for f in result.ready_to_delete] == [
            (seq(1), 1, "_FilesReadyToDelete")
        ]
        assert result.last_sequence == 6 and result.blockers == ()

    def test_scan_reports_a_gap_once_with_the_files_waiting_for_it(self, storage):
        lay_out(storage, {"t/_metadata.json": META, **data("t", 1, 2, 4, 5)})
        result = scan(storage, "t")
        assert kinds(result) == [("gap", seq(3))]
        text = message(result, "gap")
        assert seq(3) in text and "files 4-5 wait for it" in text and "publish 3" in text
        assert names(result.pending) == [seq(1), seq(2), seq(4), seq(5)]
        assert result.last_sequence == 5

    def test_scan_reports_gaps_before_the_first_file_of_a_fresh_table(self, storage):
        lay_out(storage, {"t/_metadata.json": META, **data("t", 3, 4)})
        result = scan(storage, "t")
        assert kinds(result) == [("gap", seq(1)), ("gap", seq(2))]
        assert all("files 3-4 wait for it" in b.message for b in result.blockers)

    def test_scan_reports_a_gap_right_after_the_moved_files(self, storage):
        lay_out(
            storage,
            {
                "t/_metadata.json": META,
                f"t/_ProcessedFiles/{seq(1)}": b"one",
                f"t/_ProcessedFiles/{seq(2)}": b"two",
                **data("t", 4, 5),
                # here the kept newest (3) is present and 4 is missing
                "u/_metadata.json": META,
                f"u/_ProcessedFiles/{seq(1)}": b"one",
                **data("u", 2, 4),
            },
        )
        result = scan(storage, "t")
        assert kinds(result) == [("gap", seq(3))]
        assert "files 4-5 wait for it" in message(result, "gap")
        assert result.newest_processed is None and names(result.pending) == [seq(4), seq(5)]
        other = scan(storage, "u")
        assert kinds(other) == [("gap", seq(3))]
        assert other.newest_processed is not None and other.newest_processed.name == seq(2)
        assert names(other.pending) == [seq(4)]

    def test_scan_sees_no_gap_where_processed_files_were_purged(self, storage):
        lay_out(
            storage,
            {
                "t/_metadata.json": META,
                f"t/_ProcessedFiles/{seq(6)}": b"six",  # 1-5 purged after their 7 days
                **data("t", 7, 8),
                # every moved file purged: the cleanup folder is left empty
                "u/_metadata.json": META,
                f"u/_FilesReadyToDelete/{seq(6)}": b"six",
                **data("u", 7, 8),
            },
        )
        storage.delete(f"u/_FilesReadyToDelete/{seq(6)}")
        assert storage.exists("u/_FilesReadyToDelete")
        for table in ("t", "u"):
            result = scan(storage, table)
            assert result.blockers == (), table
            assert result.newest_processed is not None and result.newest_processed.name == seq(7), table
            assert names(result.pending) == [seq(8)], table
            assert result.last_sequence == 8

    def test_scan_takes_what_the_caller_knows_is_processed(self, storage):
        lay_out(
            storage,
            {
                "t/_metadata.json": META,
                **data("t", 5, 6, 7),  # no cleanup folder: 1-4 gone with it
                "u/_metadata.json": META,
                **{f"u/_ProcessedFiles/{seq(n)}": b"x" for n in (1, 2, 3)},
                **data("u", 4, 5, 6),
            },
        )
        result = scan(storage, "t", processed_through=5)
        assert result.blockers == ()
        assert result.newest_processed is not None and result.newest_processed.name == seq(5)
        assert names(result.pending) == [seq(6), seq(7)]
        # without it, a folder starting at 5 waits for 1
        assert kinds(scan(storage, "t")) == [("gap", seq(n)) for n in (1, 2, 3, 4)]
        # a stale answer never un-processes what the listings show processed
        stale = scan(storage, "u", processed_through=2)
        assert names(stale.pending) == [seq(5), seq(6)] and stale.blockers == ()
        assert stale.newest_processed is not None and stale.newest_processed.name == seq(4)
        later = scan(storage, "u", processed_through=5)
        assert names(later.pending) == [seq(6)]
        assert later.newest_processed is not None and later.newest_processed.name == seq(5)

    def test_scan_of_a_last_update_time_table_allows_any_name_and_has_no_gaps(self, storage):
        lay_out(
            storage,
            {
                "t/_metadata.json": LAST_UPDATE_META,
                "t/7c9e6679-7425-40de-944b-e07fc1f90ae7.parquet": b"a",
                f"t/{seq(5)}": b"b",
                "t/batch-2.parquet": b"c",
                f"t/_ProcessedFiles/{seq(1)}": b"old",
            },
        )
        result = scan(storage, "t")
        assert result.metadata is not None and not result.metadata.sequential
        assert result.blockers == ()
        assert sorted(names(result.pending)) == sorted(
            [seq(5), "7c9e6679-7425-40de-944b-e07fc1f90ae7.parquet", "batch-2.parquet"]
        )
        assert result.newest_processed is None
        assert names(result.processed) == [seq(1)]
        mtimes = [f.mtime for f in result.pending]
        assert mtimes == sorted(mtimes)  # in the order the service applies them

    def test_scan_reports_names_the_contract_does_not_allow(self, storage):
        lay_out(
            storage,
            {
                "t/_metadata.json": META,
                **data("t", 1),
                f"t/{seq(2, 'csv')}": b"id\n1\n",
                "t/data.parquet": b"x",
                "t/notes.txt": b"x",
                "t/extra/f.parquet": b"x",
                "t/_00000000000000000002.parquet": b"temp",  # ignored: underscore
                "t/_scratchPad/f": b"x",
            },
        )
        result = scan(storage, "t")
        assert sorted(kinds(result)) == [
            ("bad_name", seq(2, "csv")),
            ("bad_name", "data.parquet"),
            ("bad_name", "extra"),
            ("bad_name", "notes.txt"),
        ]
        said = {b.file: b.message for b in result.blockers}
        assert said[seq(2, "csv")].startswith(f"file {seq(2, 'csv')} is csv but the table declares parquet")
        assert "is not named with 20 digits" in said["data.parquet"]
        assert "publish its rows under the next number" in said["data.parquet"]
        assert said["extra"].startswith("folder extra ") and "leading '_'" in said["extra"]
        assert said["notes.txt"].startswith("file notes.txt is not a data file")
        assert "leading '_'" in said["notes.txt"]
        assert names(result.pending) == [seq(1)]  # strays are neither pending nor gaps

    def test_scan_reports_a_file_of_another_format_in_a_last_update_time_table(self, storage):
        lay_out(storage, {"t/_metadata.json": LAST_UPDATE_META, "t/a.parquet": b"a", "t/b.csv": b"id\n"})
        result = scan(storage, "t")
        assert kinds(result) == [("bad_name", "b.csv")]
        assert names(result.pending) == ["a.parquet"]

    def test_scan_reports_a_zero_byte_file(self, storage):
        lay_out(storage, {"t/_metadata.json": META, **data("t", 1), f"t/{seq(2)}": b""})
        result = scan(storage, "t")
        assert kinds(result) == [("zero_byte", seq(2))]
        text = message(result, "zero_byte")
        assert seq(2) in text and "0 bytes" in text and "publish it again under the same name" in text

    def test_scan_reports_data_without_metadata(self, storage):
        lay_out(storage, {**data("t", 1, 2), "u/_openmirror/keystate/i1.p1/k": b"keys"})
        result = scan(storage, "t")
        assert result.exists and result.metadata is None
        assert kinds(result) == [("no_metadata", "_metadata.json")]
        text = message(result, "no_metadata")
        assert "_metadata.json" in text and "push the table again" in text
        assert names(result.pending) == [seq(1), seq(2)]
        # a folder without data files needs no metadata yet
        assert scan(storage, "u").blockers == ()

    def test_scan_reports_metadata_it_cannot_read(self, storage):
        lay_out(
            storage,
            {
                "t/_metadata.json": b'{"keyColumns": ["id"',
                **data("t", 1),
                "u/_metadata.json": b'{"keyColumns": "id"}',
            },
        )
        result = scan(storage, "t")
        assert result.metadata is None
        assert kinds(result) == [("bad_metadata", "_metadata.json")]
        text = message(result, "bad_metadata")
        assert "_metadata.json" in text and "not valid JSON" in text and "fix or recreate it" in text
        other = scan(storage, "u")
        assert kinds(other) == [("bad_metadata", "_metadata.json")]
        assert "keyColumns must be a list of column names" in message(other, "bad_metadata")

    def test_scan_reports_an_unfinished_push_only_while_nobody_holds_the_lock(self, storage):
        lay_out(
            storage,
            {
                "t/_metadata.json": META,
                **data("t", 1),
                "t/_openmirror/journal.json": b"{}",
                "t/_openmirror/staging/i1.p2/parts/part-0.parquet": b"staged",
            },
        )
        result = scan(storage, "t")
        # the staging belongs to the journal: finishing the push publishes it
        assert kinds(result) == [("unfinished_push", "t/_openmirror/journal.json")]
        text = message(result, "unfinished_push")
        assert "t/_openmirror/journal.json" in text and "db.recover('t')" in text
        with storage.lock("t", timeout=5):
            held = scan(storage, "t")
            assert held.lock.held and held.blockers == ()  # a writer is finishing it now
        # a journal left by an older version, at the landing-zone root
        storage.write_bytes("_openmirror/journal/u.json", b"{}")
        legacy = scan(storage, "u")
        assert kinds(legacy) == [("unfinished_push", "_openmirror/journal/u.json")]
        assert "_openmirror/journal/u.json" in message(legacy, "unfinished_push")

    def test_scan_reports_staging_orphaned_by_a_dead_push(self, storage):
        lay_out(
            storage,
            {
                "t/_metadata.json": META,
                "t/_openmirror/staging/i1.p2/parts/part-0.parquet": b"staged",
                "_openmirror/staging/t/p1/part-0.parquet": b"older version",
            },
        )
        result = scan(storage, "t")
        assert kinds(result) == [
            ("orphaned_staging", "t/_openmirror/staging/i1.p2"),
            ("orphaned_staging", "_openmirror/staging/t/p1"),
        ]
        for b in result.blockers:
            assert b.file in b.message and "the next push of the table removes it" in b.message
        with storage.lock("t", timeout=5):
            assert scan(storage, "t").blockers == ()  # a push is staging under the lock

    def test_scan_reports_an_unfinished_drop(self, storage):
        lay_out(
            storage,
            {
                "_openmirror/trash/t.i1.ab12cd34/00000000000000000001.parquet": b"x",
                "_openmirror/trash/tt.i2.ab12cd34/x": b"another table",
                "_openmirror/trash/t.x.i3.ab12cd34/x": b"table t.x",
            },
        )
        result = scan(storage, "t")
        assert not result.exists and result.pending == ()
        assert kinds(result) == [("unfinished_drop", "_openmirror/trash/t.i1.ab12cd34")]
        text = message(result, "unfinished_drop")
        assert "_openmirror/trash/t.i1.ab12cd34" in text and "removes it" in text
        assert kinds(scan(storage, "t.x")) == [("unfinished_drop", "_openmirror/trash/t.x.i3.ab12cd34")]

    def test_scan_reports_a_lock_held_too_long(self, storage):
        lay_out(storage, {"t/_metadata.json": META, **data("t", 1), "t/_openmirror/journal.json": b"{}"})
        with storage.lock("t", timeout=5):
            assert scan(storage, "t").blockers == ()  # a push under way
            result = scan(storage, "t", now=time.time() + 7200)
            assert result.lock.held and result.lock.holder
            assert kinds(result) == [("stale_lock", None)]
            text = message(result, "stale_lock")
            assert result.lock.holder in text and "2.0 h" in text and "stop that process" in text
            assert kinds(scan(storage, "t", stale_lock_after=60, now=time.time() + 120)) == [
                ("stale_lock", None)
            ]
        assert kinds(scan(storage, "t", now=time.time() + 7200)) == [
            ("unfinished_push", "t/_openmirror/journal.json")
        ]

    def test_scan_of_a_missing_table(self, storage):
        lay_out(storage, {"t/_metadata.json": META, **data("t", 1)})
        result = scan(storage, "nope")
        assert (result.table, result.folder, result.exists) == ("nope", "nope", False)
        assert result.metadata is None and result.state is None
        assert result.pending == () and result.newest_processed is None
        assert result.processed == () and result.ready_to_delete == ()
        assert result.last_sequence == 0 and result.blockers == ()

    def test_scan_of_a_table_in_a_schema(self, storage):
        lay_out(
            storage,
            {
                "s.schema/t/_metadata.json": META,
                f"s.schema/t/_ProcessedFiles/{seq(1)}": b"one",
                **data("s.schema/t", 2, 3, 5),
                "s.schema/t/_openmirror/journal.json": b"{}",
                "s.schema/t/_openmirror/state.json": (
                    b'{"key_columns": ["id"], "schema": "{}", "last_sequence_number": 5}'
                ),
                "t/_metadata.json": META,  # the same name at the root is another table
                **data("t", 1),
            },
        )
        result = scan(storage, "s.t")
        assert (result.table, result.folder, result.exists) == ("s.t", "s.schema/t", True)
        assert result.state is not None and result.state.last_sequence_number == 5
        assert result.newest_processed is not None and result.newest_processed.name == seq(2)
        assert names(result.pending) == [seq(3), seq(5)]
        assert names(result.processed) == [seq(1)]
        assert kinds(result) == [("gap", seq(4)), ("unfinished_push", "s.schema/t/_openmirror/journal.json")]
        assert "db.recover('s.t')" in message(result, "unfinished_push")
        assert names(scan(storage, "t").pending) == [seq(1)] and scan(storage, "t").blockers == ()

    def test_scan_takes_the_last_sequence_from_the_push_state_too(self, storage):
        lay_out(
            storage,
            {
                "t/_metadata.json": META,
                **data("t", 3),
                f"t/_ProcessedFiles/{seq(2)}": b"two",
                "t/_openmirror/state.json": (
                    b'{"key_columns": ["id"], "schema": "{}", "last_sequence_number": 9}'
                ),
            },
        )
        result = scan(storage, "t")
        assert result.last_sequence == 9 and result.state is not None
        assert result.pending == () and result.blockers == ()
