"""Live smoke test against a real Fabric landing zone (``pytest -m azure``).

Runs only when ``OPENMIRROR_TEST_URL`` names a landing zone
(``https://onelake.dfs.fabric.microsoft.com/<ws>/<db>/Files/LandingZone``) and credentials are set:
a service principal (``AZURE_CLIENT_ID``, ``AZURE_TENANT_ID`` and ``AZURE_CLIENT_SECRET`` or
``AZURE_FEDERATED_TOKEN_FILE``), or ``OPENMIRROR_TEST_CREDENTIAL=default`` to use whatever
``DefaultAzureCredential`` finds (e.g. ``az login``). Everything happens under an underscore
folder, which the service ignores, and is deleted afterwards.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from openmirror_nb._core.errors import LockTimeoutError, PathExistsError
from openmirror_nb._core.storage.registry import open_storage
from openmirror_nb._core.target import parse_target
from tests.conftest import AZURE_BEFORE

URL = os.environ.get("OPENMIRROR_TEST_URL", "")
HAS_CREDENTIALS = bool(
    os.environ.get("OPENMIRROR_TEST_CREDENTIAL") == "default"
    or (
        os.environ.get("AZURE_CLIENT_ID")
        and os.environ.get("AZURE_TENANT_ID")
        and (os.environ.get("AZURE_CLIENT_SECRET") or os.environ.get("AZURE_FEDERATED_TOKEN_FILE"))
    )
)

pytestmark = [
    pytest.mark.azure,
    pytest.mark.skipif(not (URL and HAS_CREDENTIALS), reason="set OPENMIRROR_TEST_URL and Azure credentials"),
]


@pytest.fixture(scope="module")
def credential():
    from azure.identity import DefaultAzureCredential

    # The chain as the user's environment has it: the session keeps managed identity away from
    # every other test (tests/conftest.py), this opt-in module asked for the real thing.
    with pytest.MonkeyPatch.context() as mp:
        for name, value in AZURE_BEFORE.items():
            if value is None:
                mp.delenv(name, raising=False)
            else:
                mp.setenv(name, value)
        yield DefaultAzureCredential()


@pytest.fixture
def onelake(credential):
    storage = open_storage(parse_target(URL), credential=credential)
    root = f"_openmirror/smoke-{uuid.uuid4().hex[:12]}"
    yield storage, root
    storage.delete(root)


def test_conditional_rename_refuses_to_overwrite_on_onelake(onelake):
    storage, root = onelake
    storage.write_bytes(f"{root}/00000000000000000001.parquet", b"published")
    storage.write_bytes(f"{root}/_stage/part", b"racing writer")
    with pytest.raises(PathExistsError):
        storage.rename(f"{root}/_stage/part", f"{root}/00000000000000000001.parquet")
    with pytest.raises(PathExistsError):
        storage.write_bytes(f"{root}/00000000000000000001.parquet", b"again")
    assert storage.read_bytes(f"{root}/00000000000000000001.parquet") == b"published"
    assert storage.read_bytes(f"{root}/_stage/part") == b"racing writer"
    storage.rename(f"{root}/_stage/part", f"{root}/00000000000000000002.parquet")
    assert [e.name for e in storage.list_dir(root) if not e.is_dir] == [
        "00000000000000000001.parquet",
        "00000000000000000002.parquet",
    ]


def test_uploads_listing_and_lease_lock_on_onelake(onelake, credential, tmp_path):
    storage, root = onelake
    pairs = []
    for i in range(5):
        (tmp_path / f"p{i}").write_bytes(bytes([i]) * 10)
        pairs.append((str(Path(tmp_path, f"p{i}")), f"{root}/staging/part-{i}"))
    storage.upload_files(pairs, parallelism=4)
    assert [rel for rel, _ in storage.walk_files(root)] == [f"{root}/staging/part-{i}" for i in range(5)]
    other = open_storage(parse_target(URL), credential=credential)
    name = root.rpartition("/")[2]
    with storage.lock(name, timeout=30):
        with pytest.raises(LockTimeoutError):
            with other.lock(name, timeout=2):
                pass
    with other.lock(name, timeout=30):
        pass
    storage.delete(f"_openmirror/locks/{name}.lock")
