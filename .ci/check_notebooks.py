"""Fail if a notebook folder CI runs holds no notebook, or a committed notebook carries outputs or
execution counts (they must be stripped)."""

from __future__ import annotations

import json
import pathlib
import sys

# The folders scripts/test hands to nbmake: an empty one would be collected as nothing and stay green.
REQUIRED = ("samples", "notebooks", "widgets")

root = pathlib.Path(__file__).resolve().parent.parent


# Build output of scripts/docs (not committed): the samples executed with their outputs, and the site.
BUILT = (("docs", "samples"), ("site",))


def skipped(nb: pathlib.Path) -> bool:
    built = any(nb.parts[: len(prefix)] == prefix for prefix in BUILT)
    venv = any(part.startswith(".venv") for part in nb.parts)  # .venv, .venv-runtime13, .venv-newest
    return built or venv or ".ipynb_checkpoints" in nb.parts


failed = False
for folder in REQUIRED:
    if not any(not skipped(nb) for nb in (root / folder).glob("**/*.ipynb")):
        print(f"{folder}/ holds no notebook: add at least one .ipynb there (CI runs every one with nbmake)")
        failed = True

bad = []
for nb in sorted(root.glob("*/**/*.ipynb")):
    if skipped(nb.relative_to(root)):
        continue
    cells = json.loads(nb.read_text(encoding="utf-8")).get("cells", [])
    if any(c.get("outputs") or c.get("execution_count") for c in cells if c.get("cell_type") == "code"):
        bad.append(str(nb.relative_to(root)))
if bad:
    print(
        "notebooks committed with outputs:",
        ", ".join(bad),
        "(strip them: jupyter nbconvert --clear-output --inplace FILE)",
    )
    failed = True
sys.exit(1 if failed else 0)
