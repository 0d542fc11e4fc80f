"""Frozen value types shared by every layer: table references, options, results.

Nothing here touches storage or Spark; the landing-zone words (table folder, key columns, row
marker, sequence number) are used exactly as the Fabric contract spells them.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Literal

from openmirror_nb._core.errors import ConfigError
from openmirror_nb._core.table_names import SCHEMA_SUFFIX, identity, parse_table

FileFormat = Literal["parquet", "csv", "tsv", "psv"]
"""The data files of a table (``TableOptions.file_format``): Parquet, or delimited text with a
comma, a tab or a pipe. Fixed by the first push."""
Compression = Literal["none", "snappy", "gzip", "zstd"]
"""The Parquet codecs a push writes (``db.push(compression=...)``) and the mirror reads."""
FileDetection = Literal["SequentialFileName", "LastUpdateTimeFileDetection"]
PushMode = Literal["snapshot", "changes"]
"""``snapshot``: the whole table, diffed against what was pushed; ``changes``: a change feed."""
Convention = Literal["rowmarker", "sys_op", "cdf", "debezium"]
"""How a change feed says what happened to a row (``db.push(mode="changes", convention=...)``):
contract row markers, SQL Server's ``__$operation``, Delta's change data feed, Debezium events."""
DeltaReader = Literal["spark", "deltalake"]
DeltaReaderChoice = Literal["auto", "spark", "deltalake"]
"""Which reader read a Delta table (``SyncResult.reader``): Spark's own, or ``deltalake``'s log with
Spark reading the files."""

ROW_MARKER = "__rowMarker__"
DEFAULT_ROWS_PER_FILE = 1_000_000
"""Rows per data file when a push is not told otherwise (``db.push(rows_per_file=...)``)."""


class RowMarker(IntEnum):
    """The ``__rowMarker__`` values defined by the landing-zone contract (§4)."""

    INSERT = 0
    UPDATE = 1
    DELETE = 2
    UPSERT = 4


@dataclass(frozen=True)
class TableRef:
    """A mirrored table: ``name`` at the landing-zone root or ``schema.name``."""

    name: str
    schema: str | None = None

    @classmethod
    def parse(cls, table: str) -> TableRef:
        """Parse ``"name"`` or ``"schema.name"`` by the naming rule (``table_names``): both parts
        checked and NFC-normalised. ``InvalidNameError`` names what is wrong and a name that works."""
        schema, name = parse_table(table)
        return cls(name=name, schema=schema)

    @property
    def folder(self) -> str:
        """The table folder relative to the landing zone (``schema.schema/name`` or ``name``)."""
        return f"{self.schema}{SCHEMA_SUFFIX}/{self.name}" if self.schema else self.name

    @property
    def identity(self) -> str:
        """The table the mirror makes of it, case-folded: ``dbo.orders`` for ``Orders``."""
        return identity(self.schema, self.name)

    @property
    def key(self) -> str:
        """A flat identifier safe to use as a file name (locks, journals)."""
        return f"{self.schema}.{self.name}" if self.schema else self.name

    def __str__(self) -> str:
        return self.key


@dataclass(frozen=True)
class DelimitedTextOptions:
    """How delimited-text files are written; mirrored into ``FileFormatTypeProperties``.

    Spark's CSV writer accepts only one-character line separators, so ``\\r\\n`` is not offered.
    Empty strings are written quoted and NULL as the bare ``null_value`` so the two stay distinct.
    """

    row_separator: str = "\n"
    quote: str = '"'
    escape: str = "\\"
    null_value: str = ""
    encoding: str = "UTF-8"
    separator: str | None = None  # None: the format's own (csv ",", tsv tab, psv "|")


_SEPARATORS: dict[str, str] = {"csv": ",", "tsv": "\t", "psv": "|"}


@dataclass(frozen=True)
class TableOptions:
    """Table-level settings written to ``_metadata.json`` at the first push and fixed afterwards."""

    file_format: FileFormat = "parquet"
    file_detection: FileDetection = "SequentialFileName"
    upsert_default: bool = False
    delimited: DelimitedTextOptions = field(default_factory=DelimitedTextOptions)

    def __post_init__(self) -> None:
        if self.file_format not in ("parquet", "csv", "tsv", "psv"):
            raise ConfigError(
                f"file_format {self.file_format!r} is not supported; use parquet, csv, tsv or psv."
            )
        if self.file_detection not in ("SequentialFileName", "LastUpdateTimeFileDetection"):
            raise ConfigError(
                f"file_detection {self.file_detection!r} is not supported; use "
                "'SequentialFileName' or 'LastUpdateTimeFileDetection'."
            )

    @property
    def is_delimited(self) -> bool:
        """Whether the table's files are delimited text (csv, tsv, psv) rather than Parquet."""
        return self.file_format != "parquet"

    @property
    def extension(self) -> str:
        """The data files' extension, without the dot."""
        return self.file_format

    @property
    def column_separator(self) -> str:
        """The separator delimited files use: the one set, else the format's own."""
        return self.delimited.separator or _SEPARATORS.get(self.file_format, ",")


@dataclass(frozen=True)
class PartnerInfo:
    """What ``_partnerEvents.json`` at the landing-zone root says about the publisher."""

    partner_name: str = "openmirror_nb"
    source_type: str = "Spark"
    source_version: str | None = None
    additional_information: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PushResult:
    """What one push published.

    Attributes:
        table: The table pushed, as ``name`` or ``schema.name``.
        mode: ``snapshot`` or ``changes``.
        sequence_numbers: The 20-digit sequence numbers of the files published, in order.
        rows: Rows published per marker: ``initial`` for marker-free rows, else the marker names.
        bytes: Bytes published.
        seconds: Wall time of the push.
        files: Landing-zone paths of the published files.
        removed: Internals the push removed before it started: staging and key state of pushes
            that died before their journal, or of an ended incarnation of the table (see ``db.drop``).
    """

    table: str
    mode: PushMode
    sequence_numbers: tuple[int, ...]
    rows: dict[str, int]
    bytes: int
    seconds: float
    files: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()

    @property
    def total_rows(self) -> int:
        """All rows published, of every change kind."""
        return sum(self.rows.values())

    def _summary(self) -> str:
        seqs = self.sequence_numbers
        if not seqs:
            where = "no files (nothing changed)"
        elif len(seqs) == 1:
            where = f"file {seqs[0]}"
        else:
            where = f"files {seqs[0]}..{seqs[-1]}"
        rows = ", ".join(f"{k} {v:,}" for k, v in self.rows.items() if v) or "0 rows"
        return f"{self.table}: {where}; {rows}; {self.bytes:,} bytes in {self.seconds:.1f} s"

    def __repr__(self) -> str:
        return f"PushResult({self._summary()})"

    def _repr_html_(self) -> str:
        cells = "".join(
            f"<tr><td>{html.escape(k)}</td><td style='text-align:right'>{v:,}</td></tr>"
            for k, v in self.rows.items()
        )
        seqs = ", ".join(str(s) for s in self.sequence_numbers) or "none"
        return (
            f"<div><b>Pushed {html.escape(self.table)}</b> ({self.mode}) "
            f"in {self.seconds:.1f} s, {self.bytes:,} bytes<br>"
            f"Sequence numbers: {html.escape(seqs)}"
            f"<table><tr><th>rows</th><th></th></tr>{cells}</table></div>"
        )


@dataclass(frozen=True)
class Recovery:
    """What ``db.recover`` did: finished an interrupted push (``rolled_forward``: its id) and/or
    removed what no push will finish (``removed``). True when it finished a push."""

    table: str
    rolled_forward: str | None
    removed: tuple[str, ...]

    def __bool__(self) -> bool:
        return self.rolled_forward is not None


@dataclass(frozen=True)
class DropResult:
    """What ``db.drop`` removed.

    Attributes:
        table: The table dropped.
        existed: Its folder was there.
        incarnation: The incarnation of the table it ended (``None`` if not pushed by this tool).
        data_files: Data files the folder held (with its cleanup folders).
        removed: Landing-zone paths removed, the table folder first.
        waited: Seconds waited until the mirror no longer listed the table (``None``: not asked).
    """

    table: str
    existed: bool
    incarnation: str | None
    data_files: int
    removed: tuple[str, ...]
    waited: float | None = None

    def __repr__(self) -> str:
        if not self.existed and not self.removed:
            return f"DropResult({self.table}: nothing to drop)"
        gone = f"; the mirror no longer lists it ({self.waited:.1f} s)" if self.waited is not None else ""
        return (
            f"DropResult({self.table}: removed {len(self.removed):,} paths, "
            f"{self.data_files:,} data files{gone})"
        )


@dataclass(frozen=True)
class SyncResult:
    """What one ``db.sync_delta`` did.

    Attributes:
        table: The mirrored table.
        source: The Delta table it follows.
        from_version: The source version the table held before (``None`` on the first sync).
        to_version: The source version it holds now.
        how: ``"snapshot"`` (first sync, or a fallback), ``"changes"`` (the change data feed
            between the two versions) or ``"none"`` (the source had no new version).
        fallback: Why a snapshot diff was pushed instead of the change data feed, if it was.
        push: The push that published it (``None`` when nothing was pushed).
        reader: Which reader read the source: ``"spark"`` (Spark's own Delta reader, as in a
            Fabric session) or ``"deltalake"`` (the log through ``deltalake``, the files through
            Spark).
    """

    table: str
    source: str
    from_version: int | None
    to_version: int
    how: Literal["snapshot", "changes", "none"]
    fallback: str | None = None
    push: PushResult | None = None
    reader: DeltaReader = "spark"

    def __repr__(self) -> str:
        span = (
            f"{self.from_version} -> {self.to_version}"
            if self.from_version is not None
            else str(self.to_version)
        )
        why = f" (fell back to a snapshot diff: {self.fallback})" if self.fallback else ""
        what = self.push._summary() if self.push else "nothing new"
        return f"SyncResult({self.table} at source version {span}, {self.how} by {self.reader}{why}; {what})"
