"""Secrets: a canary used as the credential's token never shows up anywhere we can look.

The canary is the bearer token of a ``TokenCredential`` used with the OneLake backend against
the loopback DFS server, which accepts exactly that token (so pushes succeed with it) — and, for
the failing-auth path, a credential whose rejected token contains the canary. We capture stdout
and stderr, every log record at DEBUG (azure's included), the text and traceback of every error,
and then scan every file the push left in the store (data, metadata, state, journal, key state),
a local mirrored database pushed with the same credential (landing zone, state, journal,
``.mirror/``, ``Files/Monitoring``, ``Tables``), and the outputs of a notebook that connects,
displays the handles and hits the auth failure.
"""

from __future__ import annotations

import logging
import os
import traceback
import uuid

import nbformat
import pytest
from azure.storage.filedatalake import LinearRetry
from nbclient import NotebookClient

import openmirror_nb as om
from openmirror_nb._core.api import MirroredDatabase
from openmirror_nb._core.errors import CredentialError, KeyColumnsError
from openmirror_nb._core.landing_zone import publish
from openmirror_nb._core.storage.adls import AdlsStorage
from openmirror_nb._core.storage.credentials import NotebookTokenCredential
from openmirror_nb._core.target import OneLakeTarget
from tests.dfs_server import DfsServer, StaticTokenCredential, make_certificate
from tests.reliability.harness import REPO

CANARY = f"canary{uuid.uuid4().hex}"  # opaque, not JWT-shaped: no pattern-based scrubbing catches it
REJECTED = f"{CANARY}-rejected"  # contains the canary, so a leak of it is found too
BASE = "mirror.MirroredDatabase/Files/LandingZone"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NO_PROXY", "127.0.0.1,localhost")
        cert, key = make_certificate(tmp_path_factory.mktemp("dfs-canary"))
        dfs = DfsServer(cert, key, tokens=(CANARY,))
        dfs.cert = cert
        dfs.create_filesystem("ws")
        yield dfs
        dfs.close()


def _storage(server, token):
    return AdlsStorage(
        account_url=server.account_url,
        file_system="ws",
        base_path=BASE,
        credential=StaticTokenCredential(token),
        connection_verify=str(server.cert),
        lease_seconds=15,
        retry_policy=LinearRetry(backoff=0, random_jitter_range=0),
    )


class Killed(BaseException):
    """Stands in for SIGKILL right after a push's journal was written."""


def _killed(storage, journal, *, recovering, **progress):
    raise Killed


def _texts_of(exc: BaseException) -> list[str]:
    """What a user or a log could see of an error: its text, repr, traceback, and whole chain."""
    seen, out = set(), [str(exc), repr(exc), "".join(traceback.format_exception(exc))]
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        out += [str(exc), repr(exc), *map(str, getattr(exc, "args", ()))]
        exc = exc.__cause__ or exc.__context__
    return out


def _assert_clean(where: str, text: str) -> None:
    assert CANARY not in text, f"the canary token leaked into {where}"


@pytest.fixture
def logs(caplog):
    caplog.set_level(logging.DEBUG)  # root: every logger, azure's too
    for name in ("azure", "azure.core", "openmirror_nb", "py4j"):
        logging.getLogger(name).setLevel(logging.DEBUG)
    yield caplog
    for name in ("azure", "azure.core", "openmirror_nb", "py4j"):
        logging.getLogger(name).setLevel(logging.NOTSET)


def _assert_logs_clean_of(caplog, logger: str) -> None:
    for record in caplog.records:
        if record.name.startswith(logger):
            _assert_clean(f"log record {record.name}", record.getMessage())


def _assert_logs_clean(caplog) -> None:
    handler = logging.Formatter()
    for record in caplog.records:
        _assert_clean(f"log record {record.name}", record.getMessage())
        if record.exc_info:
            _assert_clean(f"log record {record.name}", handler.formatException(record.exc_info))
    _assert_clean("the log", caplog.text)


@pytest.mark.spark
def test_onelake_push_and_auth_failure_never_show_the_token(spark, server, capfd, logs, monkeypatch):
    storage = _storage(server, CANARY)
    db = MirroredDatabase(target=OneLakeTarget("ws", "mirror"), storage=storage, lock_timeout=30)
    errors: list[BaseException] = []

    df = spark.createDataFrame([(1, "a", 10), (2, "b", 20)], "id long, v string, n long")
    first = db.push(df, table="sales.orders", keys=["id"])
    changes = spark.createDataFrame(
        [(3, "c", 30, 0), (1, None, None, 2)], "id long, v string, n long, op int"
    )
    db.push(changes, table="sales.orders", mode="changes", op_column="op")
    diff = spark.createDataFrame([(2, "B", 20), (3, "c", 30), (4, "d", 40)], "id long, v string, n long")
    db.push(diff, table="sales.orders", keys=["id"])
    print(db, storage, first, db.tables(), sep="\n")
    with monkeypatch.context() as patch:  # leave a journal behind, as a push killed mid-publish does
        patch.setattr(publish, "roll_forward", _killed)
        with pytest.raises(Killed):
            db.push(changes.where("op = 0"), table="sales.orders", mode="changes", op_column="op")
    with pytest.raises(KeyColumnsError) as bad_input:
        db.push(spark.createDataFrame([(5, "x"), (5, "y")], "id long, v string"), table="t", keys=["id"])
    errors.append(bad_input.value)

    rejected = MirroredDatabase(
        target=OneLakeTarget("ws", "mirror"), storage=_storage(server, REJECTED), lock_timeout=5
    )
    for attempt in (
        rejected.tables,
        lambda: rejected.push(df, table="sales.orders", keys=["id"]),
        lambda: rejected.push(df, table="fresh", keys=["id"]),
        lambda: rejected.recover("sales.orders"),
    ):
        with pytest.raises(CredentialError) as denied:
            attempt()
        assert denied.value.status == 401  # it is the auth path we meant
        errors.append(denied.value)
        print(denied.value)

    notebook = NotebookTokenCredential(lambda audience: CANARY)
    assert notebook.get_token("https://storage.azure.com/.default").token == CANARY
    print(repr(notebook), repr(storage))

    captured = capfd.readouterr()
    _assert_clean("stdout", captured.out)
    _assert_clean("stderr", captured.err)
    _assert_logs_clean(logs)
    for exc in errors:
        for text in _texts_of(exc):
            _assert_clean(f"the {type(exc).__name__} text", text)
    with server.store.lock:
        stored = [(path, node.data) for fs in server.store.fs.values() for path, node in fs.items()]
    assert any(path.endswith(".parquet") for path, _ in stored)
    for part in (
        "/_openmirror/journal.json",
        "/_openmirror/keystate/",
        "/_openmirror/state.json",
        "_metadata.json",
    ):
        assert any(part in path for path, _ in stored), part  # journal, key state, state: all scanned
    for path, data in stored:
        _assert_clean(f"stored path {path}", path)
        if data:
            assert CANARY.encode() not in data, f"the canary token leaked into {path}"
    assert db.recover("sales.orders")  # the journal was there to scan


@pytest.mark.spark
def test_local_database_with_the_credential_stores_no_token(spark, capfd, logs, tmp_path):
    root = tmp_path / "db"
    db = om.connect(root, credential=StaticTokenCredential(CANARY))
    db.push(spark.createDataFrame([(1, "a")], "id long, v string"), table="t", keys=["id"])
    db.push(spark.createDataFrame([(1, "b"), (2, "c")], "id long, v string"), table="t", keys=["id"])
    print(om.LocalMirror(root).run_once(), db)
    assert (root / ".mirror").is_dir() and (root / "Files" / "Monitoring" / "tables.json").is_file()
    for path in root.rglob("*"):
        _assert_clean(f"path {path}", str(path))
        if path.is_file():
            assert CANARY.encode() not in path.read_bytes(), f"the canary token leaked into {path}"
    captured = capfd.readouterr()
    _assert_clean("stdout", captured.out + captured.err)
    _assert_logs_clean(logs)


NOTEBOOK_CELLS = [
    """import logging, os
logging.basicConfig(level=logging.DEBUG)
from azure.storage.filedatalake import LinearRetry
from openmirror_nb._core.api import MirroredDatabase
from openmirror_nb._core.storage.adls import AdlsStorage
from openmirror_nb._core.target import OneLakeTarget
from tests.dfs_server import StaticTokenCredential

def connect(token):
    storage = AdlsStorage(
        account_url=os.environ["CANARY_ACCOUNT_URL"], file_system="ws",
        base_path="mirror.MirroredDatabase/Files/LandingZone", credential=StaticTokenCredential(token),
        connection_verify=os.environ["CANARY_CERT"], lease_seconds=15,
        retry_policy=LinearRetry(backoff=0, random_jitter_range=0),
    )
    return MirroredDatabase(target=OneLakeTarget("ws", "mirror"), storage=storage, lock_timeout=5)

db = connect(os.environ["CANARY_TOKEN"])""",
    "db",
    "db.storage",
    "db.tables()",
    "db.storage.write_bytes('notebook/probe.txt', b'probe', overwrite=True)",
    "db.storage.read_bytes('notebook/probe.txt')",
    "connect(os.environ['CANARY_TOKEN'] + '-rejected').tables()",
]


def test_notebook_outputs_never_show_the_token(server, tmp_path, monkeypatch):
    monkeypatch.setenv("CANARY_TOKEN", CANARY)
    monkeypatch.setenv("CANARY_ACCOUNT_URL", server.account_url)
    monkeypatch.setenv("CANARY_CERT", str(server.cert))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("PYTHONPATH", str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in NOTEBOOK_CELLS])
    client = NotebookClient(
        nb, kernel_name="python3", timeout=300, allow_errors=True, resources={"metadata": {"path": str(REPO)}}
    )
    client.execute()
    outputs = [o for cell in nb.cells for o in cell.get("outputs", [])]
    errors = [o for o in outputs if o.get("output_type") == "error"]
    assert len(errors) == 1 and errors[0]["ename"] == "CredentialError", errors  # only the rejected token
    assert any("stream" == o.get("output_type") for o in outputs)  # the DEBUG log went somewhere we scan
    text = nbformat.writes(nb)
    assert "MirroredDatabase(" in text and "b'probe'" in text  # the outputs are really there
    _assert_clean("the notebook's outputs", text)


def test_a_failing_source_never_shows_the_password_of_its_options(
    spark, capfd, caplog, tmp_path, monkeypatch
):
    """A source whose options hold a password fails while a push reads it, and its driver echoes
    the connection URL in the error (as JDBC drivers do): the push's failure line is scrubbed in
    the progress widget and the text log; status and every file the push left hold no password.
    Lines are not cut here, so that the cut cannot be what hides the password."""
    import io

    caplog.set_level(logging.DEBUG, logger="openmirror_nb")

    from pyspark.sql import functions as F

    from openmirror_nb._core import errors

    monkeypatch.setattr(errors, "LINE_LIMIT", 100_000)

    url = f"jdbc:postgresql://127.0.0.1:5432/erp?user=etl&password={CANARY}"

    def read(_):
        raise ConnectionError(f"could not read {url}: connection refused")

    root = tmp_path / "db"
    db = om.connect(root)
    db.push(spark.createDataFrame([(1, "a")], "id long, v string"), table="t", keys=["id"])
    failing = spark.range(3).withColumn("v", F.udf(read, "string")("id"))
    widget, log = om.WidgetProgress(), io.StringIO()
    text = om.TextProgress(log)
    events = []

    def progress(event):
        events.append(event)
        widget(event)
        text(event)

    with pytest.raises(Exception) as raised:
        db.push(failing, table="t", progress=progress)
    assert CANARY in str(raised.value), "the source's own error did not carry the password: no test"
    failed = [e for e in events if isinstance(e, om.PushFailed)]
    assert len(failed) == 1 and "ConnectionError" in failed[0].error and "***" in failed[0].error
    _assert_clean("the PushFailed event", failed[0].error)
    _assert_clean("the progress widget", widget.label.value)
    _assert_clean("the text progress", log.getvalue())
    status = db.status()
    _assert_clean("status", str(status) + status._repr_html_())
    print(om.LocalMirror(root).run_once())
    for path in root.rglob("*"):
        if path.is_file():
            assert CANARY.encode() not in path.read_bytes(), f"the password leaked into {path}"
    captured = capfd.readouterr()
    _assert_clean("stdout", captured.out)
    # Spark logs the task's failure as it is, on the JVM's stderr and through py4j's logger: the
    # user's Spark logs, not ours. What this package logs holds no password.
    _assert_logs_clean_of(caplog, "openmirror_nb")
