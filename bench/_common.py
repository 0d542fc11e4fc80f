"""Shared helpers of the benchmarks (not a benchmark itself: ``bench/run.py`` skips it).

The source frames (the 8-column ``source()`` of bench_push.py and a 1%-changed snapshot of it),
machine load, peak RSS of a process tree read from /proc, subprocess runs with a hard timeout,
and a per-phase profiler of ``db.push`` that times the push's phases, as its progress seam reports
them, and the Spark jobs each one ran.
Import it from a bench file with ``sys.path.insert(0, str(Path(__file__).parent))``.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent


def _spark_major() -> int:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return int(version("pyspark").split(".")[0])
    except PackageNotFoundError:
        return 0


# Each Spark line keeps its own results: the main line's, Runtime 2.0 (Spark 4.1, ``.venv``), under
# results/spark4/; the Runtime 1.3 line's (Spark 3.5, ``.venv-runtime13``; ``bench/run.py --runtime13``)
# under results/, where the figures from when Spark 3.5 was the main line stay.
SPARK4 = _spark_major() >= 4
RESULTS = BENCH / "results" / ("spark4" if SPARK4 else "")
PYTHON = str(ROOT / (".venv" if SPARK4 else ".venv-runtime13") / "bin" / "python")

# The 1%-changed snapshot, by key: of every 1000 base keys 8 are updated and 1 deleted;
# N/1000 new keys are appended after the base range.
UPDATED_MOD = tuple(range(100, 108))
DELETED_MOD = (7,)


def source(spark: Any, rows: int) -> Any:
    """A realistic 8-column frame shared by the benchmarks (long, strings, decimal, int, double,
    timestamp, boolean), computed from ``spark.range`` (cheap to recompute, deterministic)."""
    from pyspark.sql import functions as F

    return spark.range(rows).select(
        F.col("id"),
        F.concat(F.lit("customer-"), (F.col("id") % 9973).cast("string")).alias("customer"),
        ((F.col("id") % 100_000) / 100).cast("decimal(18,2)").alias("amount"),
        (F.col("id") % 17).cast("int").alias("qty"),
        (F.col("id") * 0.37).alias("price"),
        F.when(F.col("id") % 3 == 0, "paid").otherwise("new").alias("status"),
        (F.lit(1_760_000_000) + F.col("id")).cast("timestamp").alias("ordered_at"),
        (F.col("id") % 2 == 0).alias("flag"),
    )


def changed_source(spark: Any, rows: int) -> Any:
    """``source(rows)`` with 1% of rows changed: 0.8% updated (amount + 1, status 'changed'),
    0.1% deleted, and 0.1% new keys (ids rows .. rows + rows/1000 - 1)."""
    from pyspark.sql import functions as F

    base = source(spark, rows + rows // 1000)
    mod = F.col("id") % 1000
    old = F.col("id") < rows
    deleted = old & mod.isin(*DELETED_MOD)
    updated = old & mod.isin(*UPDATED_MOD)
    return base.where(~deleted).select(
        F.col("id"),
        F.col("customer"),
        F.when(updated, F.col("amount") + F.lit(1))
        .otherwise(F.col("amount"))
        .cast("decimal(18,2)")
        .alias("amount"),
        F.col("qty"),
        F.col("price"),
        F.when(updated, F.lit("changed")).otherwise(F.col("status")).alias("status"),
        F.col("ordered_at"),
        F.col("flag"),
    )


def planned_changes(rows: int) -> dict[str, int]:
    """How many keys ``changed_source`` inserts, updates and deletes (PushResult.rows labels)."""

    def count(mods: tuple[int, ...]) -> int:
        full, rest = divmod(rows, 1000)
        return sum(full + (1 if m < rest else 0) for m in mods)

    return {"insert": rows // 1000, "upsert": count(UPDATED_MOD), "delete": count(DELETED_MOD)}


def loadavg() -> list[float]:
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


def machine(spark: Any | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "machine": f"{platform.machine()} {os.cpu_count()} cores",
        "python": platform.python_version(),
    }
    meminfo = Path("/proc/meminfo").read_text().splitlines()
    out["mem_total_gib"] = round(int(meminfo[0].split()[1]) / 2**20, 1)
    if spark is not None:
        conf = spark.sparkContext.getConf()
        out.update(
            spark=spark.version,
            master=spark.sparkContext.master,
            driver_memory=conf.get("spark.driver.memory", "1g (default)"),
            shuffle_partitions=spark.conf.get("spark.sql.shuffle.partitions"),
        )
    return out


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def median(values: list[float]) -> float:
    s = sorted(values)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def write_result(name: str, data: dict[str, Any]) -> Path:
    """bench/results/<name>.json, or bench/results/quick/<name>.json for a smoke run."""
    folder = RESULTS / "quick" if data.get("quick") else RESULTS
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path


def free_gib(path: str | Path = "/tmp") -> float:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize / 2**30


def require_disk(gib: float, path: str | Path = "/tmp") -> None:
    free = free_gib(path)
    if free < gib:
        raise SystemExit(f"only {free:.1f} GiB free under {path}; this bench needs about {gib:.0f} GiB")


def jvm_memory(spark: Any) -> dict[str, Any]:
    """The driver JVM's max heap, peak heap-pool use and total GC time (via JMX beans)."""
    jvm = spark.sparkContext._jvm
    mf = jvm.java.lang.management.ManagementFactory
    gc_ms = sum(b.getCollectionTime() for b in mf.getGarbageCollectorMXBeans())
    heap_peak = sum(
        p.getPeakUsage().getUsed() for p in mf.getMemoryPoolMXBeans() if str(p.getType()) == "Heap memory"
    )
    return {
        "jvm_max_heap_mib": round(jvm.java.lang.Runtime.getRuntime().maxMemory() / 2**20),
        "jvm_heap_pools_peak_mib": round(heap_peak / 2**20),
        "jvm_gc_seconds": round(gc_ms / 1000, 2),
    }


# --- process trees and peak RSS, from /proc -------------------------------------------------


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        kids.setdefault(ppid, []).append(int(entry))
    return kids


def tree(pid: int) -> list[int]:
    kids, out, todo = _children(), [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def rss_bytes(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class PeakRss:
    """Samples the summed RSS of a process tree (Python + the Spark JVM) every ``interval`` s."""

    def __init__(self, pid: int, interval: float = 0.25) -> None:
        self.pid, self.interval, self.peak = pid, interval, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, sum(rss_bytes(p) for p in tree(self.pid)))
            self._stop.wait(self.interval)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def peak_mib(self) -> float:
        return round(self.peak / 2**20, 1)


def run_child(args: list[str], *, env: dict[str, str], timeout: float, cwd: Path = ROOT) -> dict[str, Any]:
    """Run a child Python process in its own process group with a hard timeout.

    Returns exit code, wall seconds, peak RSS of its tree, whether it timed out, the last JSON
    line it printed on stdout (``result``) and the tail of its stderr. On timeout the child's
    own process group (its pid) is killed, and so is the JVM it started.
    """
    full_env = {**os.environ, **env}
    start = time.perf_counter()
    proc = subprocess.Popen(
        [PYTHON, *args],
        cwd=cwd,
        env=full_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    timed_out = False
    with PeakRss(proc.pid, interval=0.5) as peak:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
    seconds = time.perf_counter() - start
    result = None
    for line in reversed(out.splitlines()):
        if line.startswith("{"):
            with contextlib.suppress(json.JSONDecodeError):
                result = json.loads(line)
                break
    return {
        "returncode": proc.returncode,
        "timed_out": timed_out,
        "wall_seconds": round(seconds, 2),
        "peak_rss_mib": peak.peak_mib,
        "result": result,
        "stderr_errors": error_lines(err),
        "stderr_tail": err[-3000:],
    }


_ERROR_WORDS = (
    "OutOfMemoryError",
    "maxResultSize",
    "Java heap space",
    "GC overhead",
    "MemoryError",
    "Killed",
)


def error_lines(text: str, limit: int = 8) -> list[str]:
    """The first distinct stderr lines that name a memory failure or an exception."""
    out: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        hit = any(w in line for w in _ERROR_WORDS) or ("Exception" in line and not line.startswith("at "))
        if hit and line[:200] not in out:
            out.append(line[:200])
        if len(out) >= limit:
            break
    return out


def failure_kind(child: dict[str, Any]) -> str | None:
    """A short name for why a child failed, or None when it succeeded."""
    result = child.get("result") or {}
    if child["returncode"] == 0 and result.get("ok"):
        return None
    if child["timed_out"]:
        return "timeout"
    text = "\n".join([result.get("error") or "", *child.get("stderr_errors", []), child["stderr_tail"]])
    for needle, kind in (
        ("maxResultSize", "spark.driver.maxResultSize exceeded"),
        ("OutOfMemoryError", "java.lang.OutOfMemoryError (driver heap)"),
        ("Java heap space", "java.lang.OutOfMemoryError (driver heap)"),
        ("GC overhead", "java.lang.OutOfMemoryError (GC overhead)"),
        ("MemoryError", "Python MemoryError"),
        ("Py4J", "Py4J error (JVM died or lost)"),
        ("Connection refused", "Py4J error (JVM died or lost)"),
    ):
        if needle in text:
            return kind
    if child["returncode"] is not None and child["returncode"] < 0:
        return f"killed by signal {-child['returncode']}"
    return f"exit code {child['returncode']}"


def child_main(run: Callable[[], dict[str, Any]]) -> None:
    """Body of a child process: print one JSON line with ``ok`` and the figures or the error."""
    try:
        out = {"ok": True, **run()}
    except BaseException as exc:  # report any failure, including MemoryError, as data
        out = {"ok": False, "error": f"{type(exc).__name__}: {str(exc)[:2000]}"}
    print(json.dumps(out), flush=True)
    sys.exit(0 if out["ok"] else 1)


# --- where the time goes in db.push ---------------------------------------------------------


def _phase(event: Any) -> str | None:
    """The profile's phase of a progress event (``None``: the current phase goes on)."""
    from openmirror_nb._core import progress as p

    if isinstance(event, p.Validating | p.WaitingForLock):
        return "validate, lock wait, settle, shape"
    if isinstance(event, p.Staging):
        return f"stage: {event.step}" if event.step else None
    if isinstance(event, p.Publishing):
        return "publish (journal + renames)"
    if isinstance(event, p.Committing):
        return "commit the state"
    return "end"  # Finished, PushFailed, Cancelled


class Profiler:
    """Times a push's phases through its progress seam, with the Spark jobs each ran.

    Pass it as ``db.push(..., progress=profiler)`` inside ``with profiler.push() as out:``. Phases
    are the push's own events (validating, each staging step, publishing, committing); every event
    carries how many Spark jobs the push has started (``ProgressEvent.jobs``, its own job group's),
    so a phase's jobs are the difference between its first event and the next phase's.
    """

    def __init__(self, spark: Any = None) -> None:
        self.records: list[dict[str, Any]] = []
        self.total_jobs = 0
        self._lock = threading.Lock()
        self._open: tuple[str, float, int] | None = None

    def install(self) -> Profiler:
        return self  # nothing to patch: the push reports its phases itself

    def restore(self) -> None:
        pass

    def __call__(self, event: Any) -> None:
        label = _phase(event)
        if label is None:
            return
        with self._lock:  # staging events also come from the push's polling thread
            if self._open is not None and self._open[0] == label:
                return
            now = time.perf_counter()
            if self._open is not None:
                name, start, jobs = self._open
                self.records.append(
                    {"phase": name, "seconds": round(now - start, 3), "jobs": event.jobs - jobs}
                )
            self._open = None if label == "end" else (label, now, event.jobs)
            if label == "end":
                self.total_jobs = event.jobs

    @contextlib.contextmanager
    def push(self) -> Iterator[dict[str, Any]]:
        """Wrap one db.push: yields a dict filled with total seconds, jobs and the phases."""
        self.records, self.total_jobs, self._open = [], 0, None
        out: dict[str, Any] = {}
        start = time.perf_counter()
        yield out
        total = time.perf_counter() - start
        phases = list(self.records)
        accounted = sum(p["seconds"] for p in phases)
        phases.append(
            {"phase": "other (outside the push's events)", "seconds": round(total - accounted, 3), "jobs": 0}
        )
        out.update(total_seconds=round(total, 3), spark_jobs=self.total_jobs, phases=phases)


def summarize_phases(profiles: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Median seconds and Spark jobs per phase label over several profiled pushes."""
    labels: list[str] = []
    for prof in profiles:
        for p in prof["phases"]:
            if p["phase"] not in labels:
                labels.append(p["phase"])
    out = []
    for label in labels:
        secs = [sum(p["seconds"] for p in prof["phases"] if p["phase"] == label) for prof in profiles]
        jobs = [sum(p["jobs"] for p in prof["phases"] if p["phase"] == label) for prof in profiles]
        out.append(
            {"phase": label, "median_seconds": round(median(secs), 3), "spark_jobs": int(median(jobs))}
        )
    return out


# --- probes: scratch outputs and alternating, warmed-up timing of named cases ----------------------


class Scratch:
    """Numbered output folders under ``work`` and the two writes probes time (Parquet, noop)."""

    def __init__(self, spark: Any, work: Path) -> None:
        self.spark, self.work, self.n = spark, work, 0

    def fresh(self) -> str:
        self.n += 1
        return str(self.work / f"out{self.n}")

    def write(self, df: Any, **opts: Any) -> None:
        """A Parquet write with the library's own write settings."""
        from openmirror_nb._core.pipeline.push.stage import _WRITE_CONF
        from openmirror_nb._core.pipeline.push.write_session import session_conf

        with session_conf(self.spark, _WRITE_CONF):
            df.write.options(**opts).parquet(self.fresh())

    @staticmethod
    def noop(df: Any) -> None:
        df.write.format("noop").mode("overwrite").save()

    def clear(self) -> None:
        for p in self.work.glob("out*"):
            shutil.rmtree(p)


def time_cases(
    cases: dict[str, Callable[[], Any]], *, repeat: int, scratch: Scratch
) -> dict[str, list[float]]:
    """One warm-up pass (JIT, first-job costs), then ``repeat`` passes in alternating order."""
    times: dict[str, list[float]] = {k: [] for k in cases}
    for fn in cases.values():
        fn()
    for rep in range(repeat):
        for name in list(cases) if rep % 2 == 0 else list(reversed(cases)):
            seconds, _ = timed(cases[name])
            times[name].append(round(seconds, 3))
            print(f"rep {rep + 1}: {seconds:7.2f} s  {name}", flush=True)
        scratch.clear()
    return times


def groupby_state(df: Any, keys: tuple[str, ...]) -> Any:
    """The key state as session 1 computed it (a group-by on the key), kept so the probes can
    compare it with the library's window count (``snapdiff.snapshot_state``)."""
    from pyspark.sql import functions as F

    from openmirror_nb._core.pipeline.keystate import hashes as keystate

    h1, h2 = keystate.row_hashes(df, keys=keys)
    hashed = df.select(*keys, h1.alias(keystate.H1), h2.alias(keystate.H2))
    return hashed.groupBy(*keys).agg(
        F.count(F.lit(1)).alias(keystate.ROWS),
        F.first(keystate.H1).alias(keystate.H1),
        F.first(keystate.H2).alias(keystate.H2),
    )


def write_probe(
    name: str,
    *,
    title: str,
    rows: int,
    repeat: int,
    times: dict[str, list[float]],
    load_before: Any,
    spark: Any,
) -> Path:
    """bench/results/<name>.json for a probe: every time, the medians, load and machine."""
    medians = {k: round(median(v), 3) for k, v in times.items()}
    out = {
        "probe": title,
        "rows": rows,
        "repeat": repeat,
        "seconds": times,
        "median_seconds": medians,
        "loadavg_before": load_before,
        "loadavg_after": loadavg(),
        **machine(spark),
    }
    path = write_result(name, out)
    for k, v in medians.items():
        print(f"{v:8.2f}  {k}")
    print(f"wrote {path}")
    return path


@contextlib.contextmanager
def forced_compaction() -> Iterator[None]:
    """The next push writes the whole key state as a new base (any delta makes it due)."""
    from openmirror_nb._core.pipeline.keystate import hashes as keystate

    saved = keystate.MAX_DELTAS
    keystate.MAX_DELTAS = 1
    try:
        yield
    finally:
        keystate.MAX_DELTAS = saved
