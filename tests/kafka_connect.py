"""A throwaway Kafka Connect worker (standalone mode) running Debezium's PostgreSQL connector, for the
tests that need real change-data-capture topics: Kafka Connect 4.3.1 and Debezium 3.6.1.Final from
the jar cache (``scripts/fetch-jars`` fetches ``scripts/jars/kafka-4.3/connect``), on a classpath of
their own, against a test broker (``tests/kafka_broker.py``) and a PostgreSQL started with
``start_server(logical=True)`` (``tests/sources/postgres.py``). No Docker; loopback only.

The worker keeps its source offsets in a file in its temporary folder, so ``stop`` (SIGTERM) or
``kill`` (SIGKILL, as a crash) followed by ``start`` resumes where the last flushed offset says, as a
restarted Connect would: the replication slot on the server holds the changes made meanwhile.

The connector's settings, the database password among them, go into a properties file in that
folder (closed to others); nothing here prints them. Connect logs a connector's configuration with
its password fields hidden.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from tests import kafka_broker, spark_packages
from tests.sources import postgres

CONNECTOR_CLASS = "io.debezium.connector.postgresql.PostgresConnector"
# A small test worker, like the broker: fast to start on a two-core CI machine.
JVM_OPTIONS = (
    "-Xms64m",
    "-Xmx384m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Djava.awt.headless=true",
)
START_TIMEOUT = 120.0


def jars() -> Path:
    """Connect's and Debezium's jar folder in the jar cache."""
    return spark_packages.cache() / "kafka-4.3" / "connect"


def missing() -> str | None:
    """Why Kafka Connect with Debezium cannot run here, or ``None``."""
    folder = jars()
    if not (folder / ".fetched").is_file() or not any(folder.glob("debezium-connector-postgres-*.jar")):
        return f"no Kafka Connect/Debezium jars in {folder}: run scripts/setup-env"
    if postgres.binaries() is None:
        return "PostgreSQL is not installed (scripts/setup-env installs Debian's postgresql)"
    return kafka_broker.missing()  # Java, the broker's jars, confluent-kafka


class KafkaConnect:
    """One standalone Connect worker with one Debezium PostgreSQL connector, ``name``, writing topics
    ``<topic_prefix>.<schema>.<table>``. ``schemas`` sets the JsonConverter's ``schemas.enable`` for
    keys and values; ``settings`` adds or overrides connector properties (``heartbeat.interval.ms``,
    ``provide.transaction.metadata``, ``decimal.handling.mode``, ...), ``worker`` the worker's (a config
    provider: ``config.providers=env``, ...), and ``env`` adds environment variables to the worker's
    (what a ``${env:NAME}`` reference reads). As a context manager, started and closed."""

    def __init__(
        self,
        bootstrap: str,
        server: postgres.PostgresServer,
        *,
        tables: str = "inv\\..*",
        topic_prefix: str = "pg",
        name: str = "pg-cdc",
        slot: str = "debezium",
        schemas: bool = True,
        settings: Mapping[str, object] | None = None,
        worker: Mapping[str, object] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        java = kafka_broker._java_bin()
        if java is None:
            raise RuntimeError("no `java` on PATH")
        self.java = java / "java"
        self.bootstrap = bootstrap
        self.server = server
        self.name = name
        self.slot = slot
        self.topic_prefix = topic_prefix
        self.root = Path(tempfile.mkdtemp(prefix="openmirror-connect-"))
        os.chmod(self.root, 0o700)  # the connector file holds the password
        self.port = kafka_broker._free_port()
        self.started_in = 0.0
        self._process: subprocess.Popen[bytes] | None = None
        self._env = dict(env or {})
        self._write_config(tables, schemas, dict(settings or {}), dict(worker or {}))

    @property
    def log(self) -> Path:
        """Everything the worker printed (its log4j2 log goes to its stdout)."""
        return self.root / "connect.log"

    @property
    def offsets(self) -> Path:
        return self.root / "offsets.dat"

    @property
    def rest(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def __enter__(self) -> KafkaConnect:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def start(self) -> None:
        """Start the worker and wait until the connector's task runs: by then Debezium has its
        replication slot (it makes it in the task's start), so every later change is captured."""
        if self.running:
            return
        began = time.monotonic()
        command = [
            str(self.java), *JVM_OPTIONS, f"-Dlog4j2.configurationFile={self.root / 'log4j2.properties'}",
            "-cp", f"{jars()}/*", "org.apache.kafka.connect.cli.ConnectStandalone",
            str(self.root / "worker.properties"), str(self.root / "connector.properties"),
        ]  # fmt: skip
        with self.log.open("ab") as out:
            self._process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=self.root,
                start_new_session=True,  # a Ctrl-C meant for pytest does not reach it
                env={**os.environ, **self._env},
            )  # fmt: skip
        try:
            self._wait_running(began + START_TIMEOUT)
        except BaseException:
            self.kill()
            raise
        self.started_in = time.monotonic() - began

    def stop(self) -> None:
        """A clean shutdown: the task stops and the worker flushes its offsets."""
        self._end(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL, as a crash: offsets not flushed since the last interval are lost, so a ``start``
        after it may deliver some changes again (Debezium is at-least-once)."""
        self._end(signal.SIGKILL)

    def close(self) -> None:
        """Stop the worker and delete its folder (the replication slot stays on the server, which
        the caller throws away)."""
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def status(self) -> dict[str, Any]:
        """The REST API's ``/connectors/<name>/status``."""
        with urllib.request.urlopen(f"{self.rest}/connectors/{self.name}/status", timeout=5) as answer:
            found: dict[str, Any] = json.load(answer)
            return found

    def wait_streaming(self, timeout: float = 60.0) -> None:
        """Wait until Debezium reads the replication slot: its snapshot is over (it streams only
        after it) and changes made now arrive as streamed events, not snapshot ones."""
        deadline = time.monotonic() + timeout
        query = f"SELECT active FROM pg_replication_slots WHERE slot_name = '{self.slot}';"
        while self.server.sql(query).strip() != "t":
            if not self.running:
                raise RuntimeError(f"Kafka Connect exited; {self._tail()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"Debezium does not stream after {timeout:.0f} s; {self._tail()}")
            time.sleep(0.1)

    def _end(self, how: signal.Signals) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(how)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)

    def _wait_running(self, deadline: float) -> None:
        while True:
            if not self.running:
                code = None if self._process is None else self._process.returncode
                raise RuntimeError(f"Kafka Connect exited ({code}) while starting; {self._tail()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"the connector did not run in {START_TIMEOUT:.0f} s; {self._tail()}")
            try:
                found = self.status()
            except (OSError, urllib.error.URLError, ValueError):  # not listening yet, or not yet known
                time.sleep(0.2)
                continue
            tasks = found.get("tasks", [])
            if any(task.get("state") == "FAILED" for task in tasks):
                # The trace is Debezium's; the settings (and so the password) are not in it.
                raise RuntimeError(f"the connector's task failed: {tasks[0].get('trace', '')[:3000]}")
            if tasks and all(task.get("state") == "RUNNING" for task in tasks):
                return
            time.sleep(0.2)

    def _write_config(
        self, tables: str, schemas: bool, settings: dict[str, object], extra_worker: dict[str, object]
    ) -> None:
        enabled = str(schemas).lower()
        worker = {
            "bootstrap.servers": self.bootstrap,
            "listeners": f"http://127.0.0.1:{self.port}",
            "rest.advertised.host.name": "127.0.0.1",
            "key.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "key.converter.schemas.enable": enabled,
            "value.converter.schemas.enable": enabled,
            "offset.storage.file.filename": self.offsets,
            # Often: a kill loses at most a second of offsets (those changes come again).
            "offset.flush.interval.ms": 1000,
            # Everything is on the classpath, and every plugin used has a ServiceLoader manifest:
            # no scan of 40 MB of jars at each start.
            "plugin.discovery": "service_load",
            "task.shutdown.graceful.timeout.ms": 5000,
            **extra_worker,
        }
        connector = {
            "name": self.name,
            "connector.class": CONNECTOR_CLASS,
            "tasks.max": 1,
            "database.hostname": "127.0.0.1",
            "database.port": self.server.port,
            "database.user": postgres.SUPERUSER,
            "database.password": postgres.PASSWORD,
            "database.dbname": postgres.DATABASE,
            "topic.prefix": self.topic_prefix,
            "plugin.name": "pgoutput",  # PostgreSQL's own decoder: no server plugin to install
            "slot.name": self.slot,
            "publication.name": f"{self.slot}_publication",
            # A publication of the included tables only, made when the connector first starts.
            "publication.autocreate.mode": "filtered",
            "table.include.list": tables,
            "skipped.operations": "none",  # the default skips truncates ("t")
            "snapshot.mode": "initial",
            # The broker does not create topics on use: Connect does, with these.
            "topic.creation.default.replication.factor": 1,
            "topic.creation.default.partitions": 1,
            **settings,
        }
        self._properties("worker.properties", worker)
        self._properties("connector.properties", connector)
        (self.root / "log4j2.properties").write_text(
            "appender.out.type = Console\nappender.out.name = out\n"
            "appender.out.layout.type = PatternLayout\nappender.out.layout.pattern = [%d] %p %m (%c)%n\n"
            "rootLogger.level = INFO\nrootLogger.appenderRef.out.ref = out\n"
            # Connect's per-request access log and the client configs it prints are noise here.
            "logger.jetty.name = org.eclipse.jetty\nlogger.jetty.level = WARN\n"
            "logger.clients.name = org.apache.kafka.clients\nlogger.clients.level = WARN\n",
            encoding="utf-8",
        )

    def _properties(self, file: str, values: Mapping[str, object]) -> None:
        # java.util.Properties reads backslashes as escapes: a regex's `\.` must be written `\\.`.
        text = "".join(f"{key}={str(value).replace(chr(92), chr(92) * 2)}\n" for key, value in values.items())
        path = self.root / file
        path.touch(mode=0o600)
        path.write_text(text, encoding="utf-8")

    def _tail(self, lines: int = 40) -> str:
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
        except OSError:
            return f"no log at {self.log}"
        return f"the end of its log {self.log}:\n" + "\n".join(text)
