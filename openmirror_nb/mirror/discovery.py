"""Find table folders and their data files in a local landing zone, as the service scans it.

Contract §1: tables at the landing-zone root land in schema ``dbo``; ``<schema>.schema/<table>``
folders name their schema; every ``_``-prefixed file or folder is ignored.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from openmirror_nb.landing_zone import parse_sequence

DEFAULT_SCHEMA = "dbo"
SCHEMA_SUFFIX = ".schema"
DATA_EXTENSIONS = ("parquet", "csv", "tsv", "psv")
_SEQUENTIAL_NAME = re.compile(r"^\d{20}\.(parquet|csv|tsv|psv)$")


@dataclass(frozen=True)
class TableFolder:
    """One table folder of the landing zone."""

    schema: str
    name: str
    path: Path
    rel: str

    @property
    def qualified(self) -> str:
        """``schema.table``, the service's ``normalizedTableName``."""
        return f"{self.schema}.{self.name}"


@dataclass(frozen=True)
class DataFile:
    """A candidate data file in a table folder, with what identifies this version of it."""

    name: str
    path: Path
    size: int
    mtime_ns: int
    ino: int

    @property
    def sequence(self) -> int | None:
        """The sequence number if the name is a 20-digit sequential name, else ``None``."""
        return parse_sequence(self.name) if _SEQUENTIAL_NAME.match(self.name) else None

    @property
    def extension(self) -> str:
        return self.name.rsplit(".", 1)[-1]

    @property
    def signature(self) -> tuple[int, int, int]:
        """Changes when the publisher replaces the file under the same name."""
        return (self.ino, self.size, self.mtime_ns)

    @property
    def label(self) -> str:
        """How messages name the file: its sequence number, else its name."""
        return str(self.sequence) if self.sequence is not None else self.name


def discover_tables(landing_zone: Path) -> list[TableFolder]:
    """Every table folder below ``landing_zone``, sorted by schema and table name."""
    found: list[TableFolder] = []
    for entry in _visible_dirs(landing_zone):
        if entry.name.endswith(SCHEMA_SUFFIX) and len(entry.name) > len(SCHEMA_SUFFIX):
            schema = entry.name[: -len(SCHEMA_SUFFIX)]
            for table in _visible_dirs(Path(entry.path)):
                rel = f"{entry.name}/{table.name}"
                found.append(TableFolder(schema, table.name, Path(table.path), rel))
        else:
            found.append(TableFolder(DEFAULT_SCHEMA, entry.name, Path(entry.path), entry.name))
    return sorted(found, key=lambda t: (t.schema, t.name, t.rel))


def _visible_dirs(folder: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as entries:
            return [e for e in entries if not e.name.startswith("_") and e.is_dir(follow_symlinks=False)]
    except (FileNotFoundError, NotADirectoryError):
        return []


def list_table_files(folder: Path) -> tuple[list[DataFile], list[str]]:
    """The data files of a table folder, and the other visible names it holds.

    Data files are those with a data-file extension; whether their names must be 20-digit ones
    depends on the table's detection strategy and is decided by the caller. Underscore items
    (``_metadata.json``, ``_ProcessedFiles``, staging folders) are neither.
    """
    files: list[DataFile] = []
    other: list[str] = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.startswith("_"):
                    continue
                ext = entry.name.rsplit(".", 1)[-1] if "." in entry.name else ""
                if ext in DATA_EXTENSIONS and entry.is_file(follow_symlinks=False):
                    st = entry.stat(follow_symlinks=False)
                    files.append(
                        DataFile(entry.name, Path(entry.path), st.st_size, st.st_mtime_ns, st.st_ino)
                    )
                else:
                    other.append(entry.name + ("/" if entry.is_dir(follow_symlinks=False) else ""))
    except (FileNotFoundError, NotADirectoryError):
        return [], []
    return sorted(files, key=lambda f: f.name), sorted(other)


def stat_file(path: Path) -> DataFile | None:
    """The ``DataFile`` at ``path``, or ``None`` if nothing is there."""
    try:
        st = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    return DataFile(path.name, path, st.st_size, st.st_mtime_ns, st.st_ino)
