"""A throwaway Apache Kafka broker for the Kafka tests: Kafka 4.3.1's own jars from the jar cache
(``scripts/fetch-jars`` fetches ``scripts/jars/kafka-4.3/broker``), one KRaft node that is its own
controller, in a temporary folder, listening on free loopback ports only. No Docker, no jar of ours.

It has three listeners: ``PLAINTEXT`` (``bootstrap``) for the tests' own clients and Spark;
``CONTROLLER``, its quorum's; and ``SASL_SSL`` (``sasl_bootstrap``), which authenticates as Azure Event
Hubs' Kafka endpoint does: mechanism PLAIN, user name the literal ``$ConnectionString``, password the
namespace's connection string (``CONNECTION_STRING``, a fake one), over TLS with a self-signed
certificate for 127.0.0.1 that clients trust through ``truststore``.

``stop`` ends the broker and keeps its data; ``start`` brings it back on the same ports, as a test
that takes the broker away in the middle of a stream needs. The helpers (``create_topic``,
``produce``, ``end_offsets``, ``delete_records``) use confluent-kafka, a client independent of the
Java one under test.
"""

from __future__ import annotations

import base64
import importlib.util
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Any

from tests import spark_packages

# A secret no code path could produce by chance: a test asserts it appears nowhere.
CONNECTION_STRING = (
    "Endpoint=sb://openmirror-test.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;"
    "SharedAccessKey=rbZr7N9chaIwWIdTp+pIWZvmpmvu69qkngHFnwkgZMA="
)
SASL_USER = "$ConnectionString"  # the user name Event Hubs expects, literally
STORE_TYPE = "PKCS12"
STORE_PASSWORD = "openmirror-kafka-store"
NODE_ID = 1
# A one-node test broker, not a production one: fast to start, light on a two-core CI machine.
JVM_OPTIONS = (
    "-Xms64m",
    "-Xmx256m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Djava.awt.headless=true",
)
START_TIMEOUT = 90.0
Message = tuple[bytes | str | None, bytes | str | None, int | None]


def jars() -> Path:
    """The broker's jar folder in the jar cache."""
    return spark_packages.cache() / "kafka-4.3" / "broker"


def _java_bin() -> Path | None:
    java = shutil.which("java")
    return Path(java).resolve().parent if java else None


def missing() -> str | None:
    """Why the Kafka tests cannot run here, or ``None``."""
    folder = jars()
    if not (folder / ".fetched").is_file() or not any(folder.glob("*.jar")):
        return f"no Kafka broker jars in {folder}: run scripts/setup-env"
    if _java_bin() is None:
        return "no `java` on PATH: the Kafka broker needs Java 17 or later"
    if importlib.util.find_spec("confluent_kafka") is None:
        return "confluent-kafka is not installed (the dev extra has it: run scripts/setup-env)"
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _cluster_id() -> str:
    """A Kafka cluster id: 16 random bytes in URL-safe base64, unpadded; never one starting with
    ``-``, which the storage tool would take for an option (Kafka's own ``Uuid.randomUuid`` skips
    those too)."""
    while True:
        found = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not found.startswith("-"):
            return found


def _jaas_quoted(value: str) -> str:
    # Kafka parses the JAAS text with java.io.StreamTokenizer: a quoted value ends at its quote and
    # takes backslash escapes; `;`, `=` and `/` inside the quotes are plain characters.
    assert '"' not in value and "\\" not in value and "\n" not in value
    return f'"{value}"'


class KafkaBroker:
    """One Kafka node in its own temporary folder: ``start``, ``stop`` (data kept), ``start`` again,
    ``close`` (stop and delete the folder); as a context manager, started and closed."""

    def __init__(self) -> None:
        bin_dir = _java_bin()
        if bin_dir is None:
            raise RuntimeError("no `java` on PATH")
        self.java = bin_dir / "java"
        self.keytool = bin_dir / "keytool"
        self.root = Path(tempfile.mkdtemp(prefix="openmirror-kafka-"))
        self.ports = {name: _free_port() for name in ("PLAINTEXT", "CONTROLLER", "SASL_SSL")}
        self.started_in = 0.0
        self._process: subprocess.Popen[bytes] | None = None
        self._producer: Any = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.ports['PLAINTEXT']}"

    @property
    def sasl_bootstrap(self) -> str:
        return f"127.0.0.1:{self.ports['SASL_SSL']}"

    @property
    def truststore(self) -> Path:
        return self.root / "truststore.p12"

    @property
    def truststore_password(self) -> str:
        return STORE_PASSWORD

    @property
    def log(self) -> Path:
        """Everything the broker printed (its log4j2 log goes to its stdout), and its tools."""
        return self.root / "broker.log"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def __enter__(self) -> KafkaBroker:
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
        """Start the broker (formatting its storage and making its certificate the first time) and
        wait until it is unfenced and answers for every partition it has."""
        if self.running:
            return
        began = time.monotonic()
        config = self._write_config()
        # The first time, keytool and the storage tool side by side: each is mostly a JVM starting.
        with ThreadPoolExecutor(max_workers=1) as pool:
            made = None if self.truststore.exists() else pool.submit(self._make_certificate)
            if not (self.root / "data" / "meta.properties").exists():
                self._java("kafka.tools.StorageTool", "format", "-t", _cluster_id(), "-c", str(config))
            if made is not None:
                made.result()
        with self.log.open("ab") as out:
            self._process = subprocess.Popen(
                [str(self.java), *self._jvm(), "kafka.Kafka", str(config)],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=self.root,
                start_new_session=True,  # a Ctrl-C meant for pytest does not reach it
            )  # fmt: skip
        try:
            self._wait_ready(began + START_TIMEOUT)
        except BaseException:
            self.stop()
            raise
        self.started_in = time.monotonic() - began

    def stop(self) -> None:
        """End the broker, keeping its data. A clean shutdown: a node killed outright would keep
        its registration with its own controller until the broker session times out, and a
        ``start`` soon after would wait for that."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)

    def close(self) -> None:
        """Stop the broker and delete its folder."""
        self._producer = None
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def _jvm(self) -> list[str]:
        logging = self.root / "log4j2.properties"
        return [*JVM_OPTIONS, f"-Dlog4j2.configurationFile={logging}", "-cp", f"{jars()}/*"]

    def _java(self, main: str, *args: str) -> None:
        self._run(main, str(self.java), *self._jvm(), main, *args)

    def _run(self, what: str, *args: str) -> None:
        done = subprocess.run(args, capture_output=True, cwd=self.root, check=False, timeout=120)
        with self.log.open("ab") as out:
            out.write(done.stdout + done.stderr)
        if done.returncode != 0:
            raise RuntimeError(f"{what} failed ({done.returncode}); {self._tail()}")

    def _make_certificate(self) -> None:
        """A self-signed certificate for 127.0.0.1 and localhost in the broker's keystore, and the
        truststore clients use: the certificate alone."""
        keystore, pem = self.root / "keystore.p12", self.root / "broker.pem"
        for left in (keystore, pem, self.truststore):  # from an attempt that failed half-way
            left.unlink(missing_ok=True)
        store = ("-storetype", STORE_TYPE, "-storepass", STORE_PASSWORD)
        keytool = (str(self.keytool), "-J-XX:+UseSerialGC", "-J-XX:TieredStopAtLevel=1")
        self._run("keytool -genkeypair", *keytool, "-genkeypair", "-alias", "broker", "-keyalg", "EC",
                  "-groupname", "secp256r1", "-dname", "CN=127.0.0.1", "-ext", "SAN=ip:127.0.0.1,dns:localhost",
                  "-validity", "30", "-keystore", str(keystore), *store, "-keypass", STORE_PASSWORD)  # fmt: skip
        self._run("keytool -exportcert", *keytool, "-exportcert", "-rfc", "-alias", "broker",
                  "-keystore", str(keystore), *store, "-file", str(pem))  # fmt: skip
        self._run("keytool -importcert", *keytool, "-importcert", "-alias", "broker", "-file", str(pem),
                  "-keystore", str(self.truststore), *store, "-noprompt")  # fmt: skip

    def _write_config(self) -> Path:
        ports = self.ports
        listeners = ",".join(f"{name}://127.0.0.1:{port}" for name, port in ports.items())
        # `$` is a word character to Kafka's JAAS parser, so the Event Hubs user name can be an option
        # name of PLAIN's user_<name>="<password>" form as it is.
        users = f"user_{SASL_USER}={_jaas_quoted(CONNECTION_STRING)}"
        settings = {
            "process.roles": "broker,controller",
            "node.id": NODE_ID,
            "controller.quorum.voters": f"{NODE_ID}@127.0.0.1:{ports['CONTROLLER']}",
            "listeners": listeners,
            "advertised.listeners": f"PLAINTEXT://{self.bootstrap},SASL_SSL://{self.sasl_bootstrap}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_ssl.plain.sasl.jaas.config": (
                f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};"
            ),
            "ssl.keystore.type": STORE_TYPE,
            "ssl.keystore.location": self.root / "keystore.p12",
            "ssl.keystore.password": STORE_PASSWORD,
            "ssl.key.password": STORE_PASSWORD,
            "log.dirs": self.root / "data",
            "num.partitions": 3,
            "auto.create.topics.enable": "false",
            "offsets.topic.replication.factor": 1,
            "offsets.topic.num.partitions": 1,
            "transaction.state.log.replication.factor": 1,
            "transaction.state.log.min.isr": 1,
            "transaction.state.log.num.partitions": 1,
            "share.coordinator.state.topic.replication.factor": 1,
            "share.coordinator.state.topic.min.isr": 1,
            "min.insync.replicas": 1,
            "group.initial.rebalance.delay.ms": 0,
            "num.network.threads": 2,
            "num.io.threads": 2,
            "background.threads": 2,
            "log.cleaner.threads": 1,
        }
        config = self.root / "server.properties"
        config.write_text("".join(f"{key}={value}\n" for key, value in settings.items()), encoding="utf-8")
        # Everything to the JVM's stdout, which start() sends to ``log``.
        (self.root / "log4j2.properties").write_text(
            "appender.out.type = Console\nappender.out.name = out\n"
            "appender.out.layout.type = PatternLayout\nappender.out.layout.pattern = [%d] %p %m (%c)%n\n"
            "rootLogger.level = INFO\nrootLogger.appenderRef.out.ref = out\n"
        )
        return config

    def _wait_ready(self, deadline: float) -> None:
        while True:
            if self._process is None or self._process.poll() is not None:
                code = None if self._process is None else self._process.returncode
                raise RuntimeError(f"the Kafka broker exited ({code}) while starting; {self._tail()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"the Kafka broker did not start in {START_TIMEOUT:.0f} s; {self._tail()}")
            # Ask metadata only once it listens: a client left to retry fills stderr with refusals.
            try:
                socket.create_connection(("127.0.0.1", self.ports["PLAINTEXT"]), timeout=1).close()
            except OSError:
                time.sleep(0.1)
                continue
            if self._answers_for_every_partition():
                return
            time.sleep(0.1)

    def _answers_for_every_partition(self) -> bool:
        """Whether the broker is unfenced (metadata lists only unfenced brokers: topics can be
        made) and answers for each partition it leads. Started again, it leads its partitions anew,
        and for a moment after it is unfenced a request for one is refused (UNKNOWN_LEADER_EPOCH)."""
        from confluent_kafka import KafkaException, TopicPartition
        from confluent_kafka.admin import OffsetSpec

        admin = self._admin()
        try:
            metadata = admin.list_topics(timeout=2)
            if NODE_ID not in metadata.brokers:
                return False
            asked = {
                TopicPartition(name, partition): OffsetSpec.latest()
                for name, topic in metadata.topics.items()
                for partition in topic.partitions
            }
            for future in admin.list_offsets(asked).values() if asked else ():
                future.result(5)
        except KafkaException:  # no answer yet, or a refusal
            return False
        return True

    def _tail(self, lines: int = 40) -> str:
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
        except OSError:
            return f"no log at {self.log}"
        return f"the end of its log {self.log}:\n" + "\n".join(text)

    # Helpers for tests, with confluent-kafka.

    def _admin(self) -> Any:
        from confluent_kafka.admin import AdminClient

        return AdminClient({"bootstrap.servers": self.bootstrap})

    def _producer_for_tests(self) -> Any:
        # One for the broker's life: an idempotent producer takes half a second to get its id.
        if self._producer is None:
            from confluent_kafka import Producer

            self._producer = Producer(
                {
                    "bootstrap.servers": self.bootstrap,
                    "enable.idempotence": True,
                    "acks": "all",
                    # The Java client's partitioner: a key lands where a Java producer would put it.
                    "partitioner": "murmur2_random",
                    # Back soon after a test restarts the broker (the default backs off up to 10 s).
                    "reconnect.backoff.max.ms": 200,
                    "retry.backoff.max.ms": 200,
                }
            )
        return self._producer

    def create_topic(self, name: str, partitions: int = 3) -> None:
        """Create ``name`` and wait until every partition has its leader."""
        from confluent_kafka.admin import NewTopic

        admin = self._admin()
        made = admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])
        made[name].result(30)
        deadline = time.monotonic() + 30
        while True:
            topic = admin.list_topics(name, timeout=10).topics.get(name)
            if topic is not None and topic.error is None and len(topic.partitions) == partitions:
                if all(p.leader == NODE_ID for p in topic.partitions.values()):
                    return
            if time.monotonic() > deadline:
                raise TimeoutError(f"topic {name} has no leader for every partition after 30 s")
            time.sleep(0.05)

    def produce(self, topic: str, messages: Sequence[Message]) -> list[tuple[int, int]]:
        """Write ``messages`` (key, value, partition or ``None`` for the partitioner's choice) with an
        idempotent producer, ``acks=all``, flushed before return; the (partition, offset) of each."""
        from confluent_kafka import KafkaError

        producer = self._producer_for_tests()
        placed: list[tuple[int, int] | None] = [None] * len(messages)
        failed: list[KafkaError] = []

        def delivered(error: KafkaError | None, message: Any, index: int) -> None:
            if error is not None:
                failed.append(error)
            else:
                placed[index] = (message.partition(), message.offset())

        for index, (key, value, partition) in enumerate(messages):
            producer.produce(
                topic, value=value, key=key, partition=-1 if partition is None else partition,
                on_delivery=lambda e, m, i=index: delivered(e, m, i),
            )  # fmt: skip
        left = producer.flush(30)
        if failed or left:
            self._producer = None  # not one left with messages of a call that has given up
            raise RuntimeError(f"{len(failed)} messages failed, {left} undelivered: {failed[:3]}")
        return [where for where in placed if where is not None]

    def end_offsets(self, topic: str) -> dict[int, int]:
        """Each partition's end offset (the offset the next message will get)."""
        from confluent_kafka import KafkaException, TopicPartition
        from confluent_kafka.admin import OffsetSpec

        admin = self._admin()
        described = admin.list_topics(topic, timeout=10).topics[topic]
        if described.error is not None:
            raise KafkaException(described.error)
        partitions = described.partitions
        asked = {TopicPartition(topic, p): OffsetSpec.latest() for p in partitions}
        return {tp.partition: future.result(30).offset for tp, future in admin.list_offsets(asked).items()}

    def delete_records(self, topic: str, before: dict[int, int]) -> None:
        """Delete each partition's messages below its offset in ``before``, as retention would."""
        from confluent_kafka import TopicPartition

        admin = self._admin()  # kept until the answers come: a client gone leaves them unresolved
        asked = [TopicPartition(topic, partition, offset) for partition, offset in before.items()]
        for future in admin.delete_records(asked).values():
            future.result(30)
