"""The mirror's private memory, kept outside the landing zone in ``<db>/.mirror/state.json``.

Per table folder: its identity, the last applied sequence number (or the processed paths for
``LastUpdateTimeFileDetection``), the batch number of the last Delta commit, the failure that
blocks it and its counters.

Folder identity rule. A table folder is the one the mirror knows when (1) its inode number is
unchanged and (2) the anchor is still there: the newest processed data file, which the mirror
leaves in place exactly as the service does (contract §6). For sequential tables the anchor must
keep its inode, size and modification time; for ``LastUpdateTimeFileDetection`` tables only its
name, because those publishers may rewrite a processed path in place (contract §3.3). Linux
reuses inode numbers, so (1) alone cannot tell a recreated folder; a recreated folder does not
hold the old anchor, which settles it. Consequence: never delete the newest processed file by
hand — the mirror then rebuilds the table from what is left in the folder.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from openmirror_nb._core.errors import MirrorError
from openmirror_nb._core.landing_zone.names import CLEANUP_FOLDERS
from openmirror_nb._core.mirror.discovery import DataFile, MirrorFolder, stat_file

STATE_VERSION = 1
KEEP_APPLIED = 250  # as many as the publisher's freshness log keeps (landing_zone.freshness_log)


@dataclass
class MirroredTableState:
    """What the mirror remembers about one table folder (mutable, private)."""

    rel: str
    schema: str
    name: str
    id: str
    folder_ino: int
    sequential: bool = True
    anchor: dict[str, Any] | None = None
    batch: int = 0
    last_sequence: int = 0
    processed: list[str] = field(default_factory=list)
    keys: list[str] | None = None
    status: str = "Initialized"
    error_code: str = ""
    error_message: str = ""
    failure: dict[str, Any] | None = None
    processed_rows: int = 0
    processed_bytes: int = 0
    last_sync: str | None = None
    # [file name, when applied (epoch s)] of the newest applied files: each file's freshness
    applied: list[list[Any]] = field(default_factory=list)

    @classmethod
    def new(cls, folder: MirrorFolder) -> MirroredTableState:
        return cls(
            rel=folder.rel,
            schema=folder.schema,
            name=folder.name,
            id=str(uuid.uuid4()),
            folder_ino=folder.path.stat().st_ino,
        )

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.name}"

    def set_anchor(self, file: DataFile) -> None:
        self.anchor = {"name": file.name, "ino": file.ino, "size": file.size, "mtime_ns": file.mtime_ns}

    def is_same_folder(self, folder: MirrorFolder) -> bool:
        """Apply the folder identity rule of this module's docstring."""
        try:
            if folder.path.stat().st_ino != self.folder_ino:
                return False
        except FileNotFoundError:
            return False
        if self.anchor is None:
            return True
        for sub in ("", *CLEANUP_FOLDERS):
            found = stat_file(folder.path / sub / self.anchor["name"])
            if found is None:
                continue
            if not self.sequential:
                return True
            if (found.ino, found.size, found.mtime_ns) == (
                self.anchor["ino"],
                self.anchor["size"],
                self.anchor["mtime_ns"],
            ):
                return True
        return False

    def record(self, info: dict[str, Any]) -> None:
        """Take over the bookkeeping of one applied batch (also replayed from Delta commits)."""
        self.batch = int(info["batch"])
        self.sequential = bool(info.get("sequential", True))
        names = list(info["files"])
        if not self.sequential:
            known = set(self.processed)
            self.processed.extend(n for n in names if n not in known)
        self.last_sequence = max(self.last_sequence, int(info.get("last_sequence") or 0))
        self.anchor = info.get("anchor")
        self.keys = list(info.get("keys") or [])
        self.processed_rows += int(info.get("rows", 0))
        self.processed_bytes += int(info.get("bytes", 0))
        self.last_sync = info.get("time")
        at = _epoch(self.last_sync)
        if at is not None:
            self.applied = [*self.applied, *([n, at] for n in names)][-KEEP_APPLIED:]


def _epoch(text: str | None) -> float | None:
    # the status files' form, 2026-01-02T03:04:05.1234560Z (3.11 reads the 7th digit, and drops it)
    try:
        return datetime.fromisoformat(text).timestamp() if text else None
    except ValueError:
        return None


class MirrorState:
    """All table states of one mirrored database, loaded from and saved to one JSON file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.tables: dict[str, MirroredTableState] = {}
        self.load()

    def load(self) -> None:
        try:
            doc = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            self.tables = {}
            return
        except (OSError, ValueError) as exc:
            raise MirrorError(
                f"The mirror state {self.path} cannot be read ({exc}); delete it to rebuild."
            ) from None
        if doc.get("version") != STATE_VERSION:
            raise MirrorError(
                f"The mirror state {self.path} has version {doc.get('version')!r}; delete it to rebuild."
            )
        try:
            self.tables = {rel: MirroredTableState(**t) for rel, t in doc.get("tables", {}).items()}
        except TypeError as exc:
            raise MirrorError(
                f"The mirror state {self.path} is not valid ({exc}); delete it to rebuild."
            ) from None

    def save(self) -> None:
        """Write the file atomically: a reader sees the old or the new state, never half."""
        doc = {"version": STATE_VERSION, "tables": {rel: asdict(t) for rel, t in self.tables.items()}}
        write_json_atomic(self.path, doc)


def write_json_atomic(path: Path, doc: Any, *, durable: bool = True) -> None:
    """Write ``doc`` as JSON to ``path`` through a temporary file and a rename.

    ``durable`` also flushes the content to disk before the rename, so a power cut cannot leave
    an empty file behind (monitoring files, rewritten on every pass, skip it).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as out:
        json.dump(doc, out, indent=2)
        out.write("\n")
        if durable:
            out.flush()
            os.fsync(out.fileno())
    os.replace(tmp, path)
