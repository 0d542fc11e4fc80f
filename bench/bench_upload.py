"""Bench: 200 staged files uploaded through ``AdlsStorage.upload_files`` in parallel vs sequentially.

Runs the real Azure SDK against the loopback DFS server (tests/dfs_server.py) over HTTPS. The
server sleeps a fixed time per request to model a network round trip (on loopback the round trip
is ~0 and client CPU would dominate). Each file costs 4 requests (create, append, flush, rename).
Writes medians to bench/results/upload.json. Usage: python bench/bench_upload.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the repo root, so tests/ is the package "tests"

from openmirror_nb._core.storage.adls import AdlsStorage  # noqa: E402
from tests.dfs_server import StaticTokenCredential, start_server  # noqa: E402

GOAL = 3.0


def stage_files(folder: Path, count: int, size: int) -> list[Path]:
    paths = []
    for i in range(count):
        path = folder / f"part-{i:05d}.parquet"
        path.write_bytes(os.urandom(size))
        paths.append(path)
    return paths


def run_once(server, cert: Path, files: list[Path], parallelism: int) -> float:
    fs = f"bench-{uuid.uuid4().hex[:8]}"
    server.create_filesystem(fs)
    storage = AdlsStorage(
        account_url=server.account_url,
        file_system=fs,
        base_path="db.MirroredDatabase/Files/LandingZone",
        credential=StaticTokenCredential(),
        connection_verify=str(cert),
    )
    storage.write_bytes("sales.schema/orders/_metadata.json", b'{"keyColumns": ["id"]}')  # warm connection
    pairs = [(str(p), f"sales.schema/orders/_openmirror/staging/push/{p.name}") for p in files]
    start = time.perf_counter()
    storage.upload_files(pairs, parallelism=parallelism)
    elapsed = time.perf_counter() - start
    assert len(storage.list_dir("sales.schema/orders/_openmirror/staging/push")) == len(files)
    return elapsed


def measure(server, cert: Path, files: list[Path], parallelism: int, reps: int, latency: float) -> dict:
    server.latency = latency
    seq = [run_once(server, cert, files, 1) for _ in range(reps)]
    par = [run_once(server, cert, files, parallelism) for _ in range(reps)]
    ratio = statistics.median(seq) / statistics.median(par)
    return {
        "latency_ms_per_request": latency * 1000,
        "sequential_s": {"median": round(statistics.median(seq), 3), "runs": [round(x, 3) for x in seq]},
        "parallel_s": {"median": round(statistics.median(par), 3), "runs": [round(x, 3) for x in par]},
        "speedup": round(ratio, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--size", type=int, default=16 * 1024, help="bytes per staged file")
    parser.add_argument("--parallelism", type=int, default=8)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--latency-ms", type=float, default=10.0)
    parser.add_argument("--quick", action="store_true", help="40 files, 1 repetition (smoke run)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "upload.json")
    args = parser.parse_args()
    if args.quick:
        args.files, args.reps = 40, 1
    os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
    with tempfile.TemporaryDirectory(prefix="bench-upload-") as tmp:
        server, cert = start_server(Path(tmp))
        try:
            files = stage_files(Path(tmp), args.files, args.size)
            modelled = measure(server, cert, files, args.parallelism, args.reps, args.latency_ms / 1000)
            raw = measure(server, cert, files, args.parallelism, args.reps, 0.0)
        finally:
            server.close()
    result = {
        "bench": "upload_files: parallel vs sequential through AdlsStorage (azure-storage-file-datalake)",
        "files": args.files,
        "bytes_per_file": args.size,
        "requests_per_file": 4,
        "parallelism": args.parallelism,
        "repetitions": args.reps,
        "goal_speedup": GOAL,
        "meets_goal": modelled["speedup"] >= GOAL,
        "with_modelled_rtt": modelled,
        "raw_loopback": raw,
        "notes": (
            "Loopback HTTPS DFS server (ThreadingHTTPServer, one thread per connection, TLS, bearer token). "
            "with_modelled_rtt: the server sleeps latency_ms per request, outside its store lock, to model "
            "the network round trip to OneLake; that is where parallel uploads pay off. raw_loopback: no "
            "added latency, so client-side CPU (SDK + TLS on the same machine as the server) bounds the gain."
        ),
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
