from __future__ import annotations

import json

import pytest

from openmirror_nb._core.errors import LandingZoneError
from openmirror_nb._core.landing_zone import (
    TableFolder,
    data_file_name,
    metadata_bytes,
    parse_metadata,
    parse_sequence,
    partner_events_bytes,
)
from openmirror_nb._core.model import DelimitedTextOptions, PartnerInfo, TableOptions
from openmirror_nb._core.storage.local import LocalStorage


def test_twenty_digit_names():
    assert data_file_name(1, "parquet") == "00000000000000000001.parquet"
    assert data_file_name(1365, "csv") == "00000000000000001365.csv"
    assert parse_sequence("00000000000000000042.parquet") == 42
    for bad in (
        "42.parquet",
        "_00000000000000000042.parquet",
        "00000000000000000042",
        "0000000000000000004x.csv",
    ):
        assert parse_sequence(bad) is None
    with pytest.raises(LandingZoneError):
        data_file_name(0, "parquet")


def test_last_sequence_number_spans_cleanup_folders(tmp_path):
    storage = LocalStorage(tmp_path)
    for rel in (
        "t/_ProcessedFiles/00000000000000000001.parquet",
        "t/_FilesReadyToDelete/00000000000000000003.parquet",
        "t/00000000000000000002.parquet",
        "t/_00000000000000000009.parquet",  # a temp name: ignored
        "t/_openmirror/00000000000000000008.parquet",  # internal folder: not counted
    ):
        storage.write_bytes(rel, b"x")
    assert TableFolder.of(storage, "t").last_sequence_number() == 3
    assert TableFolder.of(storage, "missing").last_sequence_number() == 0


def test_parquet_metadata_is_minimal_and_round_trips():
    data = metadata_bytes(key_columns=("C1", "C2"), options=TableOptions())
    doc = json.loads(data)
    assert doc == {
        "keyColumns": ["C1", "C2"],
        "fileDetectionStrategy": "SequentialFileName",
        "isUpsertDefaultRowMarker": False,
    }
    meta = parse_metadata(data)
    assert meta.key_columns == ("C1", "C2") and meta.options == TableOptions()


def test_delimited_metadata_carries_the_documented_fields():
    options = TableOptions(
        file_format="tsv",
        file_detection="LastUpdateTimeFileDetection",
        upsert_default=True,
        delimited=DelimitedTextOptions(null_value="N/A"),
    )
    columns = ({"Name": "id", "DataType": "Int32", "IsNullable": False},)
    doc = json.loads(metadata_bytes(key_columns=("id",), options=options, schema_definition=columns))
    assert doc["FileFormat"] == "DelimitedText" and doc["FileExtension"] == "tsv"
    assert doc["SchemaDefinition"] == {"Columns": [{"Name": "id", "DataType": "Int32", "IsNullable": False}]}
    props = doc["FileFormatTypeProperties"]
    assert (
        props["FirstRowAsHeader"] is True and props["ColumnSeparator"] == "\t" and props["NullValue"] == "N/A"
    )
    assert (
        doc["fileDetectionStrategy"] == "LastUpdateTimeFileDetection"
        and doc["isUpsertDefaultRowMarker"] is True
    )
    back = parse_metadata(json.dumps(doc).encode())
    assert back.options == options and back.schema_definition == columns


def test_other_producers_spellings_are_read():
    # bc2adls writes lower-case fileFormat; the docs' delimited example writes KeyColumns.
    meta = parse_metadata(
        b'\xef\xbb\xbf{"KeyColumns": ["id"], "fileFormat": "csv", "SchemaDefinition": {"Columns": []}}'
    )
    assert meta.key_columns == ("id",) and meta.options.file_format == "csv"
    with pytest.raises(LandingZoneError, match="not valid JSON"):
        parse_metadata(b"{keyColumns: [id]}")


def test_partner_events_shape():
    doc = json.loads(
        partner_events_bytes(PartnerInfo(source_version="3.5.9", additional_information={"k": "v"}))
    )
    assert doc == {
        "partnerName": "openmirror_nb",
        "sourceInfo": {"sourceType": "Spark", "sourceVersion": "3.5.9", "additionalInformation": {"k": "v"}},
    }


def test_string_booleans_explicit_separators_and_defaults_of_other_producers():
    meta = parse_metadata(
        b'{"keyColumns": ["id"], "isUpsertDefaultRowMarker": "false", "FileFormat": "DelimitedText",'
        b' "FileExtension": "tsv", "SchemaDefinition": {"Columns": []},'
        b' "FileFormatTypeProperties": {"columnSeparator": ",", "FirstRowAsHeader": true}}'
    )
    assert meta.options.upsert_default is False
    assert meta.options.file_format == "tsv" and meta.options.column_separator == ","  # the docs' own example
    assert meta.options.delimited.row_separator == "\r\n"  # the contract's default when absent
    assert parse_metadata(
        b'{"keyColumns": ["id"], "isUpsertDefaultRowMarker": "TRUE"}'
    ).options.upsert_default
