"""Run the benchmarks, each in its own process, and summarise their headline figures.

Runs every ``bench/bench_*.py`` (or the named ones: ``diff push`` = bench_diff.py and
bench_push.py) one after another, each in a fresh ``.venv/bin/python`` process (so each gets its
own Spark session and driver memory), then writes ``bench/results/summary.json`` with each
benchmark's headline figure, goal and whether it was met, read from ``bench/results/<name>.json``.

They run on the Spark line of the interpreter that runs this (``.venv``, the main line, Spark 4.1:
every path below is then under ``bench/results/spark4/``); ``--runtime13`` runs them on the Runtime 1.3
line instead (``.venv-runtime13``, made by ``scripts/setup-env --runtime13``; results under
``bench/results/``).

``--quick`` passes each benchmark its smoke-run sizes; the full results are left untouched: quick
results go to ``bench/results/quick/<name>.json`` and ``bench/results/quick/summary.json``.

Usage: .venv/bin/python bench/run.py [NAME ...] [--runtime13] [--quick] [--timeout 5400] [--list] [--summary]
(``--summary`` only rewrites summary.json from the result files already there.)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as c

# Smoke-run arguments of benchmarks that have no --quick flag of their own.
QUICK_ARGS = {
    "mirror": ["--reps", "2", "--rows", "200000", "--changes", "20000"],
}


def discover() -> dict[str, Path]:
    return {p.stem.removeprefix("bench_"): p for p in sorted(c.BENCH.glob("bench_*.py"))}


def _ratio_headline(data: dict[str, Any], figure: str, goal: float) -> dict[str, Any]:
    value = data.get("ratio")
    return {
        "figure": figure,
        "value": value,
        "goal": f"<= {goal}",
        "met": value is not None and value <= goal,
    }


def headline(name: str, data: dict[str, Any]) -> dict[str, Any]:
    """The one figure a reader wants from a result file (benches that predate ``headline``)."""
    if "headline" in data:
        return dict(data["headline"])
    if name == "push":
        return _ratio_headline(data, "initial load ÷ plain df.write.parquet", 1.2)
    if name == "mirror":
        return _ratio_headline(data, "LocalMirror.run_once ÷ deltalake MERGE", data.get("goal_ratio", 1.2))
    if name == "upload":
        rtt = data.get("with_modelled_rtt", {})
        return {
            "figure": "parallel upload speedup over sequential (modelled RTT)",
            "value": rtt.get("speedup"),
            "goal": f">= {data.get('goal_speedup')}",
            "met": data.get("meets_goal"),
        }
    return {"figure": "see the result file", "value": data.get("ratio"), "goal": data.get("goal")}


def run_one(name: str, script: Path, *, quick: bool, timeout: float) -> dict[str, Any]:
    result_file = c.RESULTS / f"{name}.json"
    saved = result_file.read_bytes() if quick and result_file.exists() else None
    saved_times = (result_file.stat().st_atime, result_file.stat().st_mtime) if saved is not None else None
    args = [c.PYTHON, str(script)]
    if quick:
        args += QUICK_ARGS.get(name, ["--quick"])
    print(f"=== {name}: {' '.join(args[1:])}", flush=True)
    load = c.loadavg()
    start = time.perf_counter()
    try:
        code: int | str = subprocess.run(args, cwd=c.ROOT, timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        code = "timeout"
    seconds = round(time.perf_counter() - start, 1)
    if quick:  # move the smoke-run result aside, put the full one back
        quick_dir = c.RESULTS / "quick"
        quick_dir.mkdir(parents=True, exist_ok=True)
        if result_file.exists() and (saved is None or result_file.read_bytes() != saved):
            shutil.move(str(result_file), quick_dir / result_file.name)
        if saved is not None and saved_times is not None:
            if not result_file.exists() or result_file.read_bytes() != saved:
                result_file.write_bytes(saved)
            os.utime(result_file, saved_times)
    print(f"=== {name}: exit {code} after {seconds} s", flush=True)
    return {"exit": code, "seconds": seconds, "loadavg_before": load, "loadavg_after": c.loadavg()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("names", nargs="*", help="benchmarks to run (default: all), e.g. diff push")
    parser.add_argument("--quick", action="store_true", help="smoke-run sizes; results under results/quick/")
    parser.add_argument("--runtime13", action="store_true", help="run on .venv-runtime13; results/")
    parser.add_argument("--timeout", type=float, default=5400, help="seconds per benchmark")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    parser.add_argument("--summary", action="store_true", help="only rewrite summary.json from the results")
    args = parser.parse_args()
    if args.runtime13:
        c.PYTHON = str(c.ROOT / ".venv-runtime13" / "bin" / "python")
        c.RESULTS = c.BENCH / "results"
    found = discover()
    if args.list:
        print("\n".join(f"{n}: {p.relative_to(c.ROOT)}" for n, p in found.items()))
        return
    unknown = [n for n in args.names if n.removeprefix("bench_") not in found]
    if unknown:
        raise SystemExit(f"unknown benchmark(s) {unknown}; known: {', '.join(found)}")
    names = [n.removeprefix("bench_") for n in args.names] or list(found)
    runs = (
        {}
        if args.summary
        else {n: run_one(n, found[n], quick=args.quick, timeout=args.timeout) for n in names}
    )
    folder = c.RESULTS / "quick" if args.quick else c.RESULTS
    summary: dict[str, Any] = {"quick": args.quick, "benchmarks": {}}
    for name in found:
        path = folder / f"{name}.json"
        entry: dict[str, Any] = {"result_file": str(path.relative_to(c.ROOT))}
        if name in runs:
            entry["run"] = runs[name]
        if path.exists():
            data = json.loads(path.read_text())
            entry["headline"] = headline(name, data)
            entry["result_written"] = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(path.stat().st_mtime))
            for key in ("loadavg_before", "loadavg_after"):
                if key in data:
                    entry[key] = data[key]
        else:
            entry["headline"] = None
        summary["benchmarks"][name] = entry
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / "summary.json"
    out.write_text(json.dumps(summary, indent=2) + "\n")
    for name, entry in summary["benchmarks"].items():
        h = entry["headline"] or {}
        print(
            f"{name:10s} {h.get('figure', '-')}: {h.get('value')} (goal {h.get('goal')}, met {h.get('met')})"
        )
    print(f"wrote {out.relative_to(c.ROOT)}")
    failed = [n for n, r in runs.items() if r["exit"] != 0]
    if failed:
        raise SystemExit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
