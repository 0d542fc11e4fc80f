"""How far the local mirror has applied each table folder, read from its private state.

The status report needs this for a local database: listings alone cannot tell whether the newest
file of a table is processed until a later file has been (the newest processed file stays in
place, contract §6). Read-only: no lock is taken, since the state file is replaced atomically.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from openmirror_nb._core.mirror.discovery import discover_folders
from openmirror_nb._core.mirror.state import MirrorState

STATE_FILE = Path(".mirror") / "state.json"


@dataclass(frozen=True)
class Applied:
    """What the mirror applied of one folder: through ``last_sequence`` (sequential tables), or
    the names in ``processed`` (``LastUpdateTimeFileDetection``); ``times``: when it applied each
    of its newest files, by name (epoch seconds)."""

    last_sequence: int
    processed: frozenset[str]
    times: Mapping[str, float] = field(default_factory=dict)


def applied_by_folder(root: Path) -> dict[str, Applied]:
    """Per table folder (relative to the landing zone), what the mirror of ``root`` applied.

    Folders the mirror has not seen, or that were recreated since (the folder identity rule of
    ``mirror.state``), are left out: what it applied belonged to another incarnation of the folder.

    Raises:
        MirrorError: the mirror's state file cannot be read.
    """
    landing_zone = root / "Files" / "LandingZone"
    if not (root / STATE_FILE).is_file() or not landing_zone.is_dir():
        return {}
    state = MirrorState(root / STATE_FILE)
    found: dict[str, Applied] = {}
    for folder in discover_folders(landing_zone):
        known = state.tables.get(folder.rel)
        if known is not None and known.is_same_folder(folder):
            times = {str(name): float(at) for name, at in known.applied}
            found[folder.rel] = Applied(known.last_sequence, frozenset(known.processed), times)
    return found
