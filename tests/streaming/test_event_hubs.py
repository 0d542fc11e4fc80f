"""``om.EventHubs`` against the broker's SASL_SSL listener, which authenticates as Event Hubs' Kafka
endpoint does (PLAIN, user ``$ConnectionString``, the connection string as password, TLS): the
package builds the settings, a wrong connection string is refused in one line, and the connection
string appears in no output, log, state, checkpoint, progress, plan or error. Event Hubs itself
cannot run here; its Kafka endpoint's authentication is what this reproduces."""

from __future__ import annotations

import json
import logging
import uuid
from pathlib import Path

import pytest

import openmirror_nb as om
from tests.kafka_broker import CONNECTION_STRING
from tests.reliability.harness import mirrored_rows

pytestmark = [pytest.mark.spark]
SECRET = CONNECTION_STRING.split("SharedAccessKey=")[1]


def _source(kafka, topic: str, env: str) -> om.EventHubs:
    return om.EventHubs(
        namespace=kafka.sasl_bootstrap,
        topics=topic,
        connection_string_env=env,
        options={
            "kafka.ssl.truststore.location": str(kafka.truststore),
            "kafka.ssl.truststore.password": kafka.truststore_password,
            "kafka.ssl.truststore.type": "PKCS12",
        },
    )


def _files_holding(folder: Path, text: str) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file() and text.encode() in p.read_bytes()]


def test_event_hubs_settings_mirror_a_topic_and_the_connection_string_shows_nowhere(
    spark, kafka, tmp_path, monkeypatch, capfd, caplog
):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("EH_CONN", CONNECTION_STRING)
    topic = f"eh{uuid.uuid4().hex[:8]}.sales.orders"
    kafka.create_topic(topic, partitions=3)
    rows = [{"id": i, "v": f"v{i}", "n": i} for i in range(6)]
    kafka.produce(topic, [(str(r["id"]), json.dumps(r), r["id"] % 3) for r in rows])
    db = om.connect(tmp_path / "db", lock_timeout=30)
    ms = db.mirror_kafka(
        _source(kafka, topic, "EH_CONN"),
        schemas={"sales.orders": "id BIGINT, v STRING, n BIGINT"},
        keys={"sales.orders": ["id"]},
        checkpoint=tmp_path / "ckpt",
    )
    ms.await_termination(timeout=600)
    ms.query.explain(extended=True)
    print(repr(ms), ms.query.lastProgress, ms.query.recentProgress, ms.query.status)
    print(db.status(), repr(_source(kafka, topic, "EH_CONN")))
    om.LocalMirror(db.target.root).run_once()
    assert mirrored_rows(db, "sales.orders") == [(r["id"], r["v"], r["n"]) for r in rows]

    out, err = capfd.readouterr()
    assert "sales.orders" in out  # what was printed is there to search
    assert SECRET not in out + err + caplog.text
    assert _files_holding(tmp_path, SECRET) == []  # landing zone, state, checkpoint


def test_a_wrong_connection_string_is_refused_in_one_line(spark, kafka, tmp_path, monkeypatch):
    wrong = CONNECTION_STRING.replace(SECRET, "WrongKey0000000000000000000000000000000000=")
    monkeypatch.setenv("EH_WRONG", wrong)
    topic = f"eh{uuid.uuid4().hex[:8]}.sales.orders"
    kafka.create_topic(topic, partitions=3)
    kafka.produce(topic, [("1", json.dumps({"id": 1}), 0)])
    db = om.connect(tmp_path / "db", lock_timeout=30)
    with pytest.raises(om.SourceError) as caught:
        db.mirror_kafka(
            _source(kafka, topic, "EH_WRONG"),
            schemas={"sales.orders": "id BIGINT"},
            keys={"sales.orders": ["id"]},
            checkpoint=tmp_path / "ckpt",
        ).await_termination(timeout=600)
    message = str(caught.value)
    assert message.startswith(f"Event Hubs {kafka.sasl_bootstrap} refused the stream's credentials")
    assert "\n" not in message and "WrongKey" not in message
    assert db.tables() == []
