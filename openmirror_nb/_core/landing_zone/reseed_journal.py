"""The journal of a reseed (``db.apply_schema_change``): which steps of the drop-and-reload are
done, kept where the drop cannot take it along.

A reseed deletes the table folder, so its journal lives at the landing-zone root, under
``_openmirror/reseeds/<table>.json`` (ignored by the service). While it exists the table is being
reseeded: a push refuses to run until the reload is in, ``db.status`` shows the step, and
``db.apply_schema_change`` with the same plan continues from the step after the last one done.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from typing import Any

from openmirror_nb._core.errors import LandingZoneError
from openmirror_nb._core.landing_zone.names import INTERNAL_FOLDER
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.storage.base import Storage

RESEED_FOLDER = f"{INTERNAL_FOLDER}/reseeds"
STEPS = (
    "record the plan",
    "drop the table folder",
    "wait until the mirror drops the table",
    "load the new data",
    "wait until the mirror has the table back",
    "verify the row count",
)
LOADED = 4  # steps done once the new data is published: pushes may run again from here


@dataclass(frozen=True)
class ReseedJournal:
    """One reseed in progress.

    Attributes:
        table: ``name`` or ``schema.name``.
        plan: The plan's digest (table, keys, schema): only the same plan continues it.
        done: How many of ``STEPS`` are done.
        started: When it began (epoch seconds).
        incarnation_before: The incarnation of the table it ends (``None`` if unknown).
        incarnation_after: The incarnation the reload began, once it is in.
        rows: Rows the reload publishes (what the verification expects).
        plan_doc: The whole plan, so that it can be made again once the table is gone.
    """

    table: str
    plan: str
    done: int
    started: float
    incarnation_before: str | None
    rows: int
    incarnation_after: str | None = None
    plan_doc: dict[str, Any] | None = None

    @property
    def step_text(self) -> str:
        """``step k of n (what it does)`` for the step to run next."""
        k = min(self.done + 1, len(STEPS))
        return f"step {k} of {len(STEPS)} ({STEPS[k - 1]})"

    def advanced(self, done: int, **changes: Any) -> ReseedJournal:
        return replace(self, done=max(self.done, done), **changes)


def reseed_path(home: TableFolder) -> str:
    return f"{RESEED_FOLDER}/{home.ref.key}.json"


def read_reseed(home: TableFolder) -> ReseedJournal | None:
    """The reseed in progress for the table, if any.

    Raises:
        LandingZoneError: the journal exists but cannot be read (the message says where).
    """
    path = reseed_path(home)
    try:
        raw = home.storage.read_bytes(path)
    except FileNotFoundError:
        return None
    try:
        return ReseedJournal(**json.loads(raw.decode("utf-8")))
    except (ValueError, TypeError) as exc:
        raise LandingZoneError(
            f"The reseed journal {path} cannot be read ({exc}); delete it once the table is pushed again."
        ) from None


def write_reseed(home: TableFolder, journal: ReseedJournal) -> None:
    data = json.dumps(asdict(journal), indent=2).encode("utf-8") + b"\n"
    home.storage.write_bytes(reseed_path(home), data, overwrite=True)


def end_reseed(home: TableFolder) -> None:
    home.storage.delete(reseed_path(home))
    home.storage.delete(RESEED_FOLDER, recursive=False)  # gone once no reseed runs


def reseeds_in_progress(storage: Storage) -> list[ReseedJournal]:
    """Every reseed in progress in the landing zone (for ``db.status``); unreadable ones skipped."""
    found = []
    for entry in storage.list_dir(RESEED_FOLDER):
        if entry.is_dir or not entry.name.endswith(".json"):
            continue
        try:
            found.append(ReseedJournal(**json.loads(storage.read_bytes(f"{RESEED_FOLDER}/{entry.name}"))))
        except (FileNotFoundError, ValueError, TypeError):
            continue
    return found
