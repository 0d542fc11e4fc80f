"""Fail if a committed notebook carries outputs or execution counts (they must be stripped)."""

from __future__ import annotations

import json
import pathlib
import sys

bad = []
for nb in sorted(pathlib.Path(".").glob("*/**/*.ipynb")):
    if ".venv" in nb.parts or ".ipynb_checkpoints" in nb.parts:
        continue
    cells = json.loads(nb.read_text(encoding="utf-8")).get("cells", [])
    if any(c.get("outputs") or c.get("execution_count") for c in cells if c.get("cell_type") == "code"):
        bad.append(str(nb))
if bad:
    print("notebooks committed with outputs:", ", ".join(bad))
    sys.exit(1)
