"""The table folders and data files of a local landing zone, as the local mirror sees them.

Which folders are tables (``dbo`` at the root, ``<schema>.schema`` folders, ``_`` items ignored)
and what a data-file name means come from ``landing_zone``, as for the publisher and the status
report; this module adds what only a local replicator needs: paths, inodes and exact times.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from openmirror_nb._core.landing_zone.discovery import discover_tables
from openmirror_nb._core.landing_zone.names import data_extension, is_ignored, parse_sequence
from openmirror_nb._core.storage.local import LocalStorage


@dataclass(frozen=True)
class MirrorFolder:
    """One table folder of the landing zone, on disk."""

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
        return parse_sequence(self.name)

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


def discover_folders(landing_zone: Path) -> list[MirrorFolder]:
    """Every table folder below ``landing_zone``, sorted by schema and table name."""
    return [
        MirrorFolder(t.schema, t.name, landing_zone / t.folder, t.folder)
        for t in discover_tables(LocalStorage(landing_zone))
    ]


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
                if is_ignored(entry.name):
                    continue
                if data_extension(entry.name) and entry.is_file(follow_symlinks=False):
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
