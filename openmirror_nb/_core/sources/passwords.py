"""A JDBC source's credentials: the password given as a value (kept in memory only: never saved,
shown or put in an error), or as a reference that a saved plan keeps instead (an environment
variable; an Azure Key Vault secret, read with ``notebookutils`` in Fabric). Credentials written
into a JDBC URL are taken out of it, so the URL a plan saves and a message shows holds none."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import unquote

from openmirror_nb._core.errors import ConfigError, scrub
from openmirror_nb._core.secret_refs import ENV_NAME, VAULT_SECRET, vault_secret

# ?user=..&password=.. (PostgreSQL, MySQL) and ;user=..;password=.. (SQL Server, Db2).
_PARAM = re.compile(r"(?i)([?&;])(password|pwd|user|username)=([^&;#]*)")
_USERINFO = re.compile(r"^(jdbc:[a-z0-9]+:(?:[a-z0-9]+:)?//)([^/@?;]+)@")  # //user:password@host
_ORACLE = re.compile(r"(?i)^(jdbc:oracle:[a-z0-9]+:)([^/@]+)/([^@]*)@")  # thin:user/password@host
# Connection properties that hold a secret: kept in memory like the password, never saved.
SECRET_PROPERTY = re.compile(r"(?i)pass|pwd|secret|token|credential|private.?key")


def split_url(url: str) -> tuple[str, str | None, str | None]:
    """``url`` without the user and password written into it, and those two (``None`` when absent).

    Example:
        >>> split_url("jdbc:postgresql://db:5432/erp?user=u&password=p&ssl=true")
        ('jdbc:postgresql://db:5432/erp?ssl=true', 'u', 'p')
    """
    found: dict[str, str] = {}

    def take(match: re.Match[str]) -> str:
        key = "password" if match.group(2).lower() in ("password", "pwd") else "user"
        found[key] = unquote(match.group(3))
        return match.group(1)

    clean = _PARAM.sub(take, url)
    clean = re.sub(r"([?&;])[&;]+", r"\1", clean).rstrip("?&;")
    oracle = _ORACLE.match(clean)
    if oracle:
        found.setdefault("user", oracle.group(2))
        found.setdefault("password", unquote(oracle.group(3)))
        clean = oracle.group(1) + "@" + clean[oracle.end() :]
    userinfo = _USERINFO.match(clean)
    if userinfo:
        user, _, password = userinfo.group(2).partition(":")
        found.setdefault("user", unquote(user))
        if password:
            found.setdefault("password", unquote(password))
        clean = userinfo.group(1) + clean[userinfo.end() :]
    return clean, found.get("user"), found.get("password")


@dataclass(frozen=True)
class Password:
    """Where a source's password comes from: a value, an environment variable or a Key Vault
    secret (``https://<vault>.vault.azure.net/secrets/<name>``), or nowhere."""

    value: str | None = field(default=None, repr=False, compare=False)
    env: str | None = None
    secret: str | None = None

    @classmethod
    def of(cls, value: str | None, env: str | None, secret: str | None) -> Password:
        """Check the reference given; at most one of the three."""
        given = [n for n, v in (("password", value), ("password_env", env), ("password_secret", secret)) if v]
        if len(given) > 1:
            raise ConfigError(
                f"Give the password one way, not {' and '.join(given)}: password_env='NAME' (an "
                "environment variable) or password_secret=<Key Vault secret URL> keep it out of saved plans."
            )
        # Neither value is repeated in the message: it may be the password, given in the wrong place.
        if env is not None and not ENV_NAME.match(env):
            raise ConfigError(
                "password_env is not an environment variable name (letters, digits and '_'); give the "
                "variable's name, e.g. password_env='ERP_PASSWORD', never the password itself."
            )
        if secret is not None and not VAULT_SECRET.match(secret):
            raise ConfigError(
                "password_secret is not a Key Vault secret URL; give one like "
                "'https://<vault>.vault.azure.net/secrets/<name>', never the password itself."
            )
        return cls(value or None, env, secret)

    @property
    def saved(self) -> dict[str, str]:
        """What a saved plan holds: the reference, never a value."""
        return (
            {"password_env": self.env}
            if self.env
            else {"password_secret": self.secret}
            if self.secret
            else {}
        )

    def describe(self) -> str:
        """How the password is given, for a repr: never the value."""
        if self.env:
            return f"from environment variable {self.env}"
        if self.secret:
            return f"from Key Vault secret {self.secret}"
        return "given (not saved)" if self.value else "none"

    def resolve(self) -> str | None:
        """The password itself, read now.

        Raises:
            ConfigError: the environment variable is not set, or a Key Vault secret is asked
                for outside Fabric.
        """
        if self.env:
            value = os.environ.get(self.env)
            if value is None:
                raise ConfigError(
                    f"Environment variable {self.env} (the source's password_env) is not set; set it "
                    "to the database password before planning or running."
                )
            return value
        if self.secret:
            return vault_secret(self.secret, instead="password_env='NAME'")
        return self.value


def hide(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every secret value and URL credential replaced by ``***``."""
    for secret in secrets:
        if secret and len(secret) >= 3:
            text = text.replace(secret, "***")
    return scrub(text)
