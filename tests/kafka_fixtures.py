"""The ``kafka`` fixture: one Kafka broker (``tests/kafka_broker.py``) for the whole test session. A
pytest plugin module, which ``tests/conftest.py`` names in ``pytest_plugins``, so that tests in any
folder can ask for it. A test that stops and starts a broker makes its own ``KafkaBroker``."""

from __future__ import annotations

import pytest

from tests.kafka_broker import KafkaBroker, missing


@pytest.fixture(scope="session")
def kafka():
    """A running broker, closed (stopped and deleted) after the session.

    Skips (saying why) where its jars, Java or confluent-kafka are missing: scripts/setup-env
    provides all three.
    """
    why = missing()
    if why:
        pytest.skip(why)
    with KafkaBroker() as broker:
        yield broker
