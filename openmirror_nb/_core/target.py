"""Parse what ``om.connect(target)`` was given into a local or a OneLake mirrored database."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from openmirror_nb._core.errors import ConfigError

DEFAULT_LOCAL_PATH = "openmirror-db"
LANDING_ZONE = "Files/LandingZone"
ONELAKE_HOST = "onelake.dfs.fabric.microsoft.com"


@dataclass(frozen=True)
class LocalTarget:
    """A local mirrored database: a folder laid out like the Fabric item."""

    root: Path

    @property
    def landing_zone(self) -> Path:
        return self.root / "Files" / "LandingZone"

    @property
    def monitoring(self) -> Path:
        return self.root / "Files" / "Monitoring"

    @property
    def tables(self) -> Path:
        return self.root / "Tables"

    def __str__(self) -> str:
        return str(self.root)


@dataclass(frozen=True)
class OneLakeTarget:
    """A Fabric mirrored database's landing zone on OneLake."""

    workspace: str
    item: str
    host: str = ONELAKE_HOST

    @property
    def https_url(self) -> str:
        return f"https://{self.host}/{self.workspace}/{self.item}/{LANDING_ZONE}"

    @property
    def abfss_url(self) -> str:
        return f"abfss://{self.workspace}@{self.host}/{self.item}/{LANDING_ZONE}"

    def __str__(self) -> str:
        return self.https_url


Target = LocalTarget | OneLakeTarget

_ONELAKE_HINT = (
    "use https://onelake.dfs.fabric.microsoft.com/<workspace>/<database>/Files/LandingZone "
    "or abfss://<workspace>@onelake.dfs.fabric.microsoft.com/<database>/Files/LandingZone"
)


def parse_target(target: str | os.PathLike[str] | None) -> Target:
    """Resolve a connect target.

    ``None`` is ``./openmirror-db``; a path or ``file://`` URL is a local mirrored database (a
    path ending in ``Files/LandingZone`` is taken as that database's landing zone); an
    ``https://`` or ``abfss://`` OneLake URL is a Fabric mirrored database.
    """
    if target is None:
        return LocalTarget(Path(DEFAULT_LOCAL_PATH).resolve())
    text = os.fspath(target)
    if not text.strip():
        raise ConfigError("connect() target is empty; pass a folder, a file:// URL or a OneLake URL.")
    parsed = urlparse(text)
    scheme = parsed.scheme.lower()
    if scheme in ("https", "abfss"):
        return _parse_onelake(text, scheme, parsed.netloc, parsed.path)
    if scheme == "file":
        text = unquote(parsed.path)
    elif scheme and len(scheme) > 1:
        raise ConfigError(
            f"connect() target {text!r} has unsupported scheme {scheme!r}; {_ONELAKE_HINT}, or a folder."
        )
    root = Path(text).expanduser().resolve()
    if root.parts[-2:] == ("Files", "LandingZone"):
        root = root.parent.parent
    return LocalTarget(root)


def _parse_onelake(text: str, scheme: str, netloc: str, path: str) -> OneLakeTarget:
    parts = [unquote(p) for p in path.split("/") if p]
    if scheme == "abfss":
        workspace, _, host = netloc.partition("@")
        item_parts = parts
    else:
        host = netloc
        workspace, item_parts = (parts[0], parts[1:]) if parts else ("", [])
    if not host.lower().endswith(".fabric.microsoft.com") or not workspace or not item_parts:
        raise ConfigError(f"connect() target {text!r} is not a OneLake landing zone; {_ONELAKE_HINT}.")
    item, rest = item_parts[0], "/".join(item_parts[1:])
    if rest.rstrip("/") not in ("", LANDING_ZONE):
        raise ConfigError(
            f"connect() target {text!r} is not the item's landing zone ({rest.rstrip('/')!r} is not "
            f"{LANDING_ZONE}); {_ONELAKE_HINT}."
        )
    return OneLakeTarget(workspace=workspace, item=item, host=host.lower())
