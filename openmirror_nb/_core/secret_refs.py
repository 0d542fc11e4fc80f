"""Where a secret is kept instead of in code or a saved file: an environment variable's name, or an
Azure Key Vault secret's URL (read with ``notebookutils`` in Fabric). A JDBC source's password and
Event Hubs' connection string are given so."""

from __future__ import annotations

import re

from openmirror_nb._core.errors import ConfigError

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
VAULT_SECRET = re.compile(
    r"^(https://[A-Za-z0-9-]+\.vault\.[a-z0-9.]+/)secrets/([A-Za-z0-9-]+)(?:/[0-9a-f]*)?/?$"
)


def vault_secret(url: str, *, instead: str) -> str:
    """The value of Key Vault secret ``url`` (checked against ``VAULT_SECRET``), read with
    ``notebookutils``; outside Fabric a ``ConfigError`` that says to give it as ``instead``."""
    match = VAULT_SECRET.match(url)
    assert match is not None  # checked where the reference was given
    try:
        from notebookutils import credentials  # type: ignore[import-not-found]
    except ImportError:
        raise ConfigError(
            f"Key Vault secret {url} is read with notebookutils, which only a Fabric notebook has; "
            f"elsewhere give it with {instead}."
        ) from None
    return str(credentials.getSecret(match.group(1), match.group(2)))
