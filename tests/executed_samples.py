"""The sample notebooks as the test run executed them, kept for the documentation site.

``scripts/test`` runs every ``samples/*.ipynb`` with nbmake, and the site shows them with their
outputs; executing them a second time for the site doubled the time they cost CI. Loaded as a
pytest plugin (``-p tests.executed_samples --executed-samples DIR``), this writes each sample that
ran clean into ``DIR`` with its outputs, stamped with ``stamp()`` of the sources it ran from.
``scripts/docs`` renders such a copy only while its stamp still holds (``python -m
tests.executed_samples fresh SAMPLE COPY`` exits 0) and executes the sample otherwise.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
KEY = "openmirror_executed_from"


def stamp(sample: Path) -> str:
    """SHA-256 of the sample and of every file of the package: a copy executed from other code
    is stale even if the notebook is the same."""
    digest = hashlib.sha256(sample.read_bytes())
    for path in sorted((ROOT / "openmirror_nb").rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def fresh(sample: Path, copy: Path) -> bool:
    """``copy`` holds the outputs of ``sample`` executed from the sources as they are now."""
    try:
        return json.loads(copy.read_text(encoding="utf-8"))["metadata"][KEY] == stamp(sample)
    except (OSError, ValueError, KeyError):
        return False


def pytest_addoption(parser: Any) -> None:
    parser.addoption(
        "--executed-samples",
        metavar="DIR",
        help="write each samples/*.ipynb that nbmake ran clean into DIR, with its outputs",
    )


def pytest_configure(config: Any) -> None:
    folder = config.getoption("executed_samples")
    if not folder or not config.getoption("nbmake", False):
        return
    from nbmake.nb_run import NotebookRun  # nbmake's runner returns the executed notebook

    out = Path(folder).resolve()
    execute = NotebookRun.execute

    def execute_and_keep(run: Any) -> Any:
        sample = Path(run.filename).resolve()
        before = stamp(sample)  # the sources as the run starts
        result = execute(run)
        if result.error is None and sample.parent == ROOT / "samples":
            import nbformat

            result.nb.metadata[KEY] = before
            out.mkdir(parents=True, exist_ok=True)
            nbformat.write(result.nb, str(out / sample.name))
        return result

    NotebookRun.execute = execute_and_keep  # type: ignore[method-assign]


if __name__ == "__main__":  # python -m tests.executed_samples fresh SAMPLE COPY
    if len(sys.argv) != 4 or sys.argv[1] != "fresh":
        sys.exit("usage: python -m tests.executed_samples fresh SAMPLE COPY")
    sys.exit(0 if fresh(Path(sys.argv[2]), Path(sys.argv[3])) else 1)
