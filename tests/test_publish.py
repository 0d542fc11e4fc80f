"""The publish protocol on a local landing zone, without Spark: journal, renames, roll-forward."""

from __future__ import annotations

import json
import os

import pytest

from openmirror_nb._core.errors import LandingZoneError
from openmirror_nb._core.landing_zone.journal import Journal
from openmirror_nb._core.landing_zone.lifecycle import settle
from openmirror_nb._core.landing_zone.publish import publish
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.storage.local import LocalStorage
from tests.journals import staged_journal

FOLDER = "sales.schema/orders"
STAGING = f"{FOLDER}/_openmirror/staging/i1.p1"


def _home(storage: LocalStorage) -> TableFolder:
    return TableFolder.of(storage, "sales.orders")


def recover(storage: LocalStorage) -> Journal | None:
    return settle(_home(storage)).rolled_forward


def _last_sequence(storage: LocalStorage) -> int:
    state = _home(storage).read_state()
    assert state is not None
    return state.last_sequence_number


def _journal(
    storage: LocalStorage, parts: list[bytes], start: int = 1, metadata: str | None = '{"keyColumns": ["id"]}'
) -> Journal:
    return staged_journal(
        _home(storage), parts, push_id="p1", incarnation="i1", start=start, metadata=metadata
    )


def _names(storage: LocalStorage) -> list[str]:
    return sorted(e.name for e in storage.list_dir(FOLDER) if not e.is_dir)


def test_publish_renames_in_order_and_commits_state(tmp_path):
    storage = LocalStorage(tmp_path)
    publish(_home(storage), _journal(storage, [b"one", b"two", b"three"]))
    assert _names(storage) == [
        "00000000000000000001.parquet",
        "00000000000000000002.parquet",
        "00000000000000000003.parquet",
        "_metadata.json",
    ]
    assert storage.read_bytes(f"{FOLDER}/00000000000000000002.parquet") == b"two"
    assert _last_sequence(storage) == 3
    assert not storage.exists(_home(storage).journal_path)
    assert not storage.exists(STAGING)
    assert storage.exists("_partnerEvents.json")


def test_roll_forward_after_a_crash_between_renames(tmp_path):
    storage = LocalStorage(tmp_path)
    journal = _journal(storage, [b"one", b"two"])
    _home(storage).write_journal(journal)
    storage.write_bytes(f"{FOLDER}/_metadata.json", journal.metadata.encode())
    storage.rename(journal.entries[0].staged, f"{FOLDER}/00000000000000000001.parquet")
    # a crash after os.link but before unlink leaves the second part in both places
    os.link(tmp_path / journal.entries[1].staged, tmp_path / FOLDER / "00000000000000000002.parquet")
    assert recover(storage) is not None
    assert _names(storage)[:2] == ["00000000000000000001.parquet", "00000000000000000002.parquet"]
    assert storage.read_bytes(f"{FOLDER}/00000000000000000002.parquet") == b"two"
    assert _last_sequence(storage) == 2
    assert recover(storage) is None  # nothing left to do


def test_a_processed_file_is_not_published_twice(tmp_path):
    storage = LocalStorage(tmp_path)
    journal = _journal(storage, [b"one"])
    _home(storage).write_journal(journal)
    os.makedirs(tmp_path / FOLDER / "_ProcessedFiles")
    # crashed between link and unlink, and the mirror already moved the file away
    os.link(
        tmp_path / journal.entries[0].staged,
        tmp_path / FOLDER / "_ProcessedFiles" / "00000000000000000001.parquet",
    )
    recover(storage)
    assert "00000000000000000001.parquet" not in _names(storage)
    assert _last_sequence(storage) == 1


def test_a_foreign_file_is_never_overwritten_and_numbers_stay_continuous(tmp_path):
    storage = LocalStorage(tmp_path)
    journal = _journal(storage, [b"one", b"two"], start=1)
    storage.write_bytes(f"{FOLDER}/00000000000000000001.parquet", b"someone else")
    done = publish(_home(storage), journal)
    assert storage.read_bytes(f"{FOLDER}/00000000000000000001.parquet") == b"someone else"
    assert [e.sequence for e in done.entries] == [2, 3]
    assert storage.read_bytes(f"{FOLDER}/00000000000000000003.parquet") == b"two"
    assert json.loads(storage.read_bytes(f"{FOLDER}/_openmirror/state.json"))["last_sequence_number"] == 3


def test_a_lost_staged_part_is_reported_not_skipped(tmp_path):
    storage = LocalStorage(tmp_path)
    journal = _journal(storage, [b"one"])
    _home(storage).write_journal(journal)
    storage.delete(journal.entries[0].staged)
    with pytest.raises(LandingZoneError, match="never published"):
        recover(storage)
    assert storage.exists(_home(storage).journal_path)  # kept for a human to look at


def test_existing_metadata_is_never_rewritten(tmp_path):
    storage = LocalStorage(tmp_path)
    storage.write_bytes(f"{FOLDER}/_metadata.json", b'{"keyColumns": ["id"], "mine": 1}')
    publish(_home(storage), _journal(storage, [b"one"], metadata='{"keyColumns": ["id"]}'))
    assert storage.read_bytes(f"{FOLDER}/_metadata.json") == b'{"keyColumns": ["id"], "mine": 1}'
