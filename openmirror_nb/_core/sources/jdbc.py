"""``om.Jdbc``: a schema of a database Spark reads over JDBC.

Tables, columns, keys and row estimates come from the driver's ``DatabaseMetaData``, called
through Spark's JVM gateway (``jdbc_meta``); the columns' Spark types from Spark's JDBC reader
itself, so the plan sees each column as a push will. The driver's jar must be on the session's
``spark.jars`` (``om.get_spark`` adds Debian's PostgreSQL driver when it is installed; Fabric's
runtime ships PostgreSQL's and MySQL's).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.column_types import apply_types
from openmirror_nb._core.errors import ConfigError, OpenMirrorError, user_line
from openmirror_nb._core.sources.passwords import SECRET_PROPERTY, Password, hide, split_url
from openmirror_nb._core.sources.table import Source, SourceKind, SourceTable
from openmirror_nb._core.sources.watermark import keep_rows_past

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

# Driver classes of the common databases, by the URL's subprotocol: Spark finds a driver loaded
# from spark.jars only when told its class.
DRIVERS = {
    "postgresql": "org.postgresql.Driver",
    "sqlserver": "com.microsoft.sqlserver.jdbc.SQLServerDriver",
    "mysql": "com.mysql.cj.jdbc.Driver",
    "mariadb": "org.mariadb.jdbc.Driver",
    "oracle": "oracle.jdbc.OracleDriver",
    "db2": "com.ibm.db2.jcc.DB2Driver",
}
_RANGE_ARGS = ("column", "lowerBound", "upperBound", "numPartitions")
_BACKTICK = frozenset({"mysql", "mariadb"})  # the others quote identifiers with "
REFERENCE = (
    "password_env: NAME (an environment variable holding it) or password_secret: <Key Vault secret URL>"
)


class Jdbc(Source):
    """A schema of a database, read through Spark's JDBC reader.

    Args:
        url: The JDBC URL, e.g. ``jdbc:postgresql://host:5432/erp``. A user or password written
            into it is taken out (the URL kept, saved and shown holds no credentials).
        user: The database user.
        password: The password as a value: used, never saved, shown or put in a message. A plan
            saved from this source asks for ``password_env`` or ``password_secret`` instead.
        password_env: The environment variable holding the password (what a saved plan keeps).
        password_secret: An Azure Key Vault secret holding it,
            ``https://<vault>.vault.azure.net/secrets/<name>`` (read in Fabric with
            ``notebookutils.credentials.getSecret``).
        schema: The source's schema (default: the connection's current schema, e.g. PostgreSQL's
            ``public``, SQL Server's ``dbo``). ``plan_sources(target_schema=...)`` names the
            mirrored one.
        properties: More JDBC connection properties (``ssl``, ``fetchsize``...). Properties whose
            name says they hold a secret (``sslpassword``, ``token``...) are kept like the password.
        driver: The driver's class (default: by the URL for PostgreSQL, SQL Server, MySQL,
            MariaDB, Oracle and Db2; else the one ``java.sql.DriverManager`` finds).

    Example:
        >>> src = om.Jdbc("jdbc:postgresql://db:5432/erp", user="etl", password_env="ERP_PASSWORD")
        >>> plan = db.plan_sources(src, target_schema="erp")
    """

    kind: SourceKind = "jdbc"

    def __init__(
        self,
        url: str,
        *,
        user: str | None = None,
        password: str | None = None,
        password_env: str | None = None,
        password_secret: str | None = None,
        schema: str | None = None,
        properties: Mapping[str, str] | None = None,
        driver: str | None = None,
    ) -> None:
        if not isinstance(url, str) or not url.startswith("jdbc:"):
            shown = hide(str(url), [password])
            raise ConfigError(
                f"JDBC URL {shown!r} does not start with 'jdbc:'; give one like 'jdbc:postgresql://host:5432/db'."
            )
        clean, url_user, url_password = split_url(url)
        props = {str(k): str(v) for k, v in (properties or {}).items()}
        prop_user, prop_password = props.pop("user", None), props.pop("password", None)
        self.url = clean
        self.user = user or url_user or prop_user
        self._password = Password.of(password or url_password or prop_password, password_env, password_secret)
        self.schema = schema
        self.properties = {k: v for k, v in props.items() if not SECRET_PROPERTY.search(k)}
        self._secret_properties = {k: v for k, v in props.items() if SECRET_PROPERTY.search(k)}
        self.driver = driver
        self._resolved: str | None = None  # the password last read from its reference, for hide()

    @property
    def subprotocol(self) -> str:
        """The database kind the URL names: ``postgresql`` of ``jdbc:postgresql://...``."""
        return self.url.split(":", 2)[1].lower()

    @property
    def driver_class(self) -> str | None:
        """The driver class Spark is told to load (``None``: let ``DriverManager`` find one)."""
        return self.driver or DRIVERS.get(self.subprotocol)

    @property
    def password_env(self) -> str | None:
        """The environment variable holding the password, if that is how it is given."""
        return self._password.env

    @property
    def password_secret(self) -> str | None:
        """The Key Vault secret holding the password, if that is how it is given."""
        return self._password.secret

    @property
    def has_unsaved_secrets(self) -> bool:
        """True when a secret was given as a value (the password without a reference, or a secret
        property): a saved plan leaves it out, so a loaded one needs it given again."""
        return bool(self._password.value and not self._password.saved) or bool(self._secret_properties)

    def discover(self) -> list[SourceTable]:
        """The tables of the schema, with their columns as Spark reads them, primary keys, unique
        constraints on NOT NULL columns, identity columns and row estimates (the database's
        statistics; PostgreSQL's ``pg_class.reltuples``).

        Raises:
            ConfigError: the database cannot be reached or refuses the login, or the schema
                does not exist (the message names the ones that do).
            MissingDependencyError: the driver is not on the session's ``spark.jars``.
        """
        from openmirror_nb._core.runtime import get_spark
        from openmirror_nb._core.sources.jdbc_meta import discover

        return discover(get_spark(), self)

    def read(self, table: str, *, ranges: tuple[str, int, int, int] | None = None) -> DataFrame:
        """One table of the schema as a Spark DataFrame (read lazily, through Spark's JDBC reader).
        A PostgreSQL table is read exactly, in any time zone (``pg_read``): its ``numeric``
        columns without precision (or over 38 digits) as their text, which a plan's ``types``
        declares (``read_typed``).

        ``ranges``: (column, lowest, highest, count): read in ``count`` ranges of the whole-number
        ``column`` at once, over as many connections (Spark's ``partitionColumn``).

        Raises:
            ConfigError: the table cannot be read (gone, no access, a column Spark refuses); the
                message holds the driver's reason, never a secret.
        """
        try:
            return self.read_columns(table, ranges=ranges)[0]
        except Exception as exc:
            raise self._unreadable(table, exc) from None

    def read_typed(self, table: str, types: Mapping[str, str]) -> DataFrame:
        """``table`` with the plan's declared column ``types`` (``Source.read_typed``); a column
        declared ``string`` is read as the database's text.

        Raises:
            ConfigError: a column whose type needs declaring has none (it would be rounded).
        """
        strings = frozenset(c for c, t in types.items() if t == "string")
        try:
            frame, untyped = self.read_columns(table, strings=strings)
        except Exception as exc:
            raise self._unreadable(table, exc) from None
        missing = [f"{c} ({t})" for c, t in untyped.items() if c not in types]
        if missing:
            raise ConfigError(
                f"Table {table!r} has {', '.join(missing)}, which no Spark decimal holds whole; declare "
                "its type in the plan (types: {column: decimal(p,s)} or {column: string}) and plan again."
            )
        decimals = {c: t for c, t in types.items() if c not in strings}
        return keep_rows_past(frame, lambda rows: apply_types(rows, decimals, table=table))

    def read_columns(
        self,
        table: str,
        *,
        ranges: tuple[str, int, int, int] | None = None,
        strings: frozenset[str] = frozenset(),
    ) -> tuple[DataFrame, dict[str, str]]:
        """``read``'s frame, and its columns read as text because no Spark type holds them whole
        (column -> the source's type, e.g. ``numeric``); ``strings``: columns read as text. The
        driver's and Spark's errors are raised as they are."""
        from openmirror_nb._core.runtime import get_spark
        from openmirror_nb._core.sources.pg_read import read_exactly

        split = {} if ranges is None else dict(zip(_RANGE_ARGS, ranges, strict=True))
        postgres = self.subprotocol == "postgresql"
        exact = read_exactly(self, table, split=split, strings=strings) if postgres else None
        if exact is not None:
            frame, columns = exact
            return frame, {c.name: c.shown for c in columns if c.untyped and c.name not in strings}
        properties = self.connection_properties()
        return get_spark().read.jdbc(self.url, self.qualified(table), properties=properties, **split), {}

    def _unreadable(self, table: str, exc: Exception) -> Exception:
        """The driver's and Spark's own errors of a read, in one line without secrets."""
        if isinstance(exc, OpenMirrorError):
            return exc
        return ConfigError(
            f"Table {table!r} of {self.url} cannot be read ({user_line(exc, hide=self.hide)}); check "
            "that it exists and that the user may read it."
        )

    def read_in_ranges(self, table: str, column: str, parts: int) -> DataFrame | None:
        """``table`` read in ``parts`` ranges of the whole-number ``column`` between its lowest and
        highest value (``bounds``), over as many connections; ``None`` when it has no such range."""
        low, high = self.bounds(table, column)
        if low is None or high is None or low >= high:
            return None
        return self.read(table, ranges=(column, low, high, parts))

    def bounds(self, table: str, column: str) -> tuple[int | None, int | None]:
        """The lowest and highest value of the whole-number ``column`` of ``table`` (one query,
        run in the database)."""
        quoted = self.quote(column)
        query = f"(SELECT MIN({quoted}) AS lo, MAX({quoted}) AS hi FROM {self.qualified(table)}) bounds"
        from openmirror_nb._core.runtime import get_spark

        row = get_spark().read.jdbc(self.url, query, properties=self.connection_properties()).first()
        if row is None or row["lo"] is None:
            return None, None
        return int(row["lo"]), int(row["hi"])

    def qualified(self, table: str, schema: str | None = None) -> str:
        """``table`` as the database's SQL names it: quoted, with the schema (``"public"."orders"``)."""
        return ".".join(self.quote(p) for p in (schema or self.schema, table) if p)

    def quote(self, name: str) -> str:
        """One identifier quoted as the database's SQL quotes it (``"order id"``)."""
        quote = "`" if self.subprotocol in _BACKTICK else '"'
        return quote + name.replace(quote, quote * 2) + quote

    def connection_properties(self) -> dict[str, str]:
        """Everything the driver is given: user, password (read now), driver class, properties."""
        props = {**self.properties, **self._secret_properties}
        if self.user:
            props["user"] = self.user
        password = self._resolved = self._password.resolve()
        if password:
            props["password"] = password
        if self.driver_class:
            props["driver"] = self.driver_class
        return props

    def hide(self, text: str) -> str:
        """``text`` (a driver's or Spark's message) with this source's secrets replaced by ``***``."""
        return hide(text, [self._password.value, self._resolved, *self._secret_properties.values()])

    def version(self, table: str) -> str | None:
        """A PostgreSQL table's version (``Source.version``, ``pg_version``); ``None`` for other
        databases and where PostgreSQL's counters may miss a change: the run reads the table."""
        from openmirror_nb._core.runtime import get_spark
        from openmirror_nb._core.sources.pg_version import pg_version

        return pg_version(get_spark(), self, table) if self.subprotocol == "postgresql" else None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Jdbc:
        """The source a saved plan describes, which holds no secret: a password, or a URL or
        property holding credentials, is refused (the message never repeats it)."""
        if "password" in data:
            raise ConfigError(
                f"source holds a password, which a plan file never does; remove it and write {REFERENCE}."
            )
        built = super().from_dict(data)
        assert isinstance(built, Jdbc)
        if (
            built.url != data.get("url")
            or built.has_unsaved_secrets
            or len(built.properties) != len(data.get("properties") or {})
        ):
            raise ConfigError(
                f"source holds credentials (in its url or properties); remove them and write {REFERENCE}."
            )
        return built

    def to_dict(self) -> dict[str, Any]:
        """The source as a saved plan holds it: no password, only its reference."""
        saved: dict[str, Any] = {"kind": self.kind, "url": self.url}
        saved.update({k: v for k, v in (("user", self.user), ("schema", self.schema)) if v})
        saved.update(self._password.saved)
        if self.properties:
            saved["properties"] = dict(sorted(self.properties.items()))
        if self.driver:
            saved["driver"] = self.driver
        return saved

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Jdbc) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash((self.url, self.user, self.schema))

    def __repr__(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in (("user", self.user), ("schema", self.schema)) if v)
        return f"Jdbc({self.url!r}{extra}, password: {self._password.describe()})"
