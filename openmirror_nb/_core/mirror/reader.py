"""Read one landing-zone data file (Parquet with any codec, or delimited text) into Arrow.

The file's extension picks the reader (``.parquet``, else delimited text with the options of
``_metadata.json``). Whatever makes a file unreadable becomes a ``TableFault`` naming the reason;
the caller adds the file's sequence number.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from openmirror_nb._core.landing_zone.metadata import TableMetadata
from openmirror_nb._core.mirror.delimited import read_delimited, text_format
from openmirror_nb._core.mirror.discovery import DataFile
from openmirror_nb._core.mirror.faults import TableFault


def read_data_file(file: DataFile, settings: TableMetadata) -> pa.Table:
    """The rows of ``file`` in file order, columns as written (marker included).

    Raises:
        TableFault: the file is empty, truncated, corrupt or does not match its format.
    """
    if file.extension == "parquet":
        return _read_parquet(file)
    return read_delimited(file.path, size=file.size, fmt=text_format(settings), extension=file.extension)


def _read_parquet(file: DataFile) -> pa.Table:
    if file.size == 0:
        raise TableFault("The file is empty (0 bytes); a Parquet file needs at least its footer.")
    try:
        # pandas metadata is ignored so the columns are exactly the file's columns.
        parquet = pq.ParquetFile(file.path)
        return parquet.read(use_pandas_metadata=False)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise TableFault(f"Parquet file cannot be read: {exc}") from None
