"""Behaviour 9: a bad file fails only its table, names its sequence number, and is repairable."""

from __future__ import annotations

import io
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

PREFIX = (
    "We encountered an error while parsing data file being used, please fix the file and try again. "
    "The error is: "
)


def _parquet_bytes(table):
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def _good_change():
    return pa.table({"id": [1], "v": ["fixed"], "__rowMarker__": pa.array([1], pa.int32())})


BAD_FILES = {
    "zero bytes": (b"", "The file is empty (0 bytes)"),
    "truncated": (_parquet_bytes(_good_change())[:-20], "Parquet file cannot be read"),
    "not parquet": (b"id,v\n1,x\n", "Parquet file cannot be read"),
    "marker 3": (
        _parquet_bytes(pa.table({"id": [1, 2], "v": ["a", "b"], "__rowMarker__": [0, 3]})),
        "Row 2 has __rowMarker__ value 3",
    ),
    "marker null": (
        _parquet_bytes(pa.table({"id": [1], "v": ["a"], "__rowMarker__": pa.array([None], pa.int32())})),
        "Row 1 has __rowMarker__ value None",
    ),
    "marker not last": (
        _parquet_bytes(pa.table({"__rowMarker__": [0], "id": [1], "v": ["a"]})),
        "__rowMarker__ must be the last column; it is column 1 of 3",
    ),
    "marker not an integer": (
        _parquet_bytes(pa.table({"id": [1], "v": ["a"], "__rowMarker__": ["1"]})),
        "__rowMarker__ must be an integer column",
    ),
}


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_a_bad_file_fails_its_table_until_replaced_under_the_same_name(lz, case):
    data, reason = BAD_FILES[case]
    for table in ("bad", "good"):
        lz.metadata(table, keyColumns=["id"])
        lz.parquet(table, 1, [{"id": 1, "v": "a"}])
    lz.publish("bad", "00000000000000000002.parquet", data)
    lz.parquet("bad", 3, lz.with_marker([{"id": 3, "v": "c"}], [0]))
    lz.parquet("good", 2, lz.with_marker([{"id": 2, "v": "b"}], [0]))
    run = lz.mirror.run_once()
    bad = run["bad"]
    assert bad.status == "Failed" and bad.files_applied == ("00000000000000000001.parquet",)
    assert bad.error.startswith(PREFIX + "Exception reading the data file. Exception: ")
    assert reason in bad.error
    assert bad.error.endswith("SequenceNumber: 2")
    status = lz.table_status("bad")
    assert (status["status"], status["errorCode"], status["errorMessage"]) == (
        "Failed",
        "InputValidationError",
        bad.error,
    )
    assert run["good"].status == "Replicating" and run["good"].sequence_numbers == (1, 2)
    # Still failed on the next pass, and still nothing after the bad file applies.
    assert lz.mirror.run_once()["bad"].status == "Failed"
    lz.parquet("bad", 2, _good_change())
    run = lz.mirror.run_once()
    assert run["bad"].status == "Replicating" and run["bad"].sequence_numbers == (2, 3)
    assert lz.table_status("bad")["errorMessage"] == ""
    assert lz.rows("bad") == [{"id": 1, "v": "fixed"}, {"id": 3, "v": "c"}]


def test_an_empty_csv_file_reports_no_data_rows(lz):
    lz.metadata(
        "t",
        keyColumns=["id"],
        SchemaDefinition={"Columns": [{"Name": "id", "DataType": "Int32"}]},
        FileFormat="DelimitedText",
        FileExtension="csv",
    )
    lz.publish("t", "00000000000000000001.csv", b"")
    run = lz.mirror.run_once()
    assert "No data rows available" in run["t"].error and run["t"].error.endswith("SequenceNumber: 1")
    lz.publish("t", "00000000000000000001.csv", b"id\n")  # a header-only file is a valid empty file
    run = lz.mirror.run_once()
    assert run["t"].status == "Replicating"
    assert lz.rows("t") == []


def test_a_recreated_folder_clears_a_failure(lz):
    lz.metadata("bad", keyColumns=["id"])
    lz.publish("bad", "00000000000000000001.parquet", b"junk")
    assert lz.mirror.run_once()["bad"].status == "Failed"
    shutil.rmtree(lz.folder("bad"))
    lz.metadata("bad", keyColumns=["id"])
    lz.parquet("bad", 1, [{"id": 1}])
    run = lz.mirror.run_once()
    assert run["bad"].status == "Replicating" and lz.rows("bad") == [{"id": 1}]


def test_data_files_without_metadata_fail_until_it_arrives(lz):
    lz.parquet("orders", 1, [{"id": 1}])
    run = lz.mirror.run_once()
    assert run["orders"].status == "Failed"
    assert run["orders"].error.startswith("We encountered an error while parsing metadata file being used")
    assert "PathNotFound Files/LandingZone/orders/_metadata.json" in run["orders"].error
    lz.metadata("orders", keyColumns=["id"])
    assert lz.mirror.run_once()["orders"].status == "Replicating"


def test_invalid_metadata_json_fails_the_table(lz):
    lz.parquet("orders", 1, [{"id": 1}])
    lz.publish(
        "orders",
        "_metadata.json",
        b'{"keyColumns": ["id"], "fileDetectionStrategy": LastUpdateTimeFileDetection}',
    )
    run = lz.mirror.run_once()
    assert run["orders"].status == "Failed"
    assert "Exception reading the metadata file: _metadata.json" in run["orders"].error


def test_two_files_with_one_sequence_number_fail_the_table(lz):
    lz.metadata("orders", keyColumns=["id"])
    lz.parquet("orders", 1, [{"id": 1}])
    lz.publish("orders", "00000000000000000001.csv", b"id\n2\n")
    run = lz.mirror.run_once()
    assert run["orders"].status == "Failed"
    assert "Several files carry sequence number 1" in run["orders"].error
