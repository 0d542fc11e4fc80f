"""``om.load_plan``: a plan file (``SourcePlan.save``, then perhaps edited by hand) read back
exactly, a file of the wrong shape refused with one line that names the value and the fix
(``plan_shape``), as is one holding a password or a URL with credentials."""

from __future__ import annotations

import os
from pathlib import Path

from openmirror_nb._core.sources.plan import SourcePlan
from openmirror_nb._core.sources.plan_shape import Shape
from openmirror_nb._core.sources.plan_text import VERSION
from openmirror_nb._core.table_names import check_name

_TOP = ("version", "source", "target_schema", "problems", "tables")


def load_plan(path: str | os.PathLike[str]) -> SourcePlan:
    """A plan saved by ``SourcePlan.save`` (and perhaps edited), checked for shape.

    Only the file is read: whether its tables still exist and its keys hold is checked when the
    plan runs.

    Raises:
        ConfigError: the file is missing, not YAML, or a value in it is not one a plan can
            hold (the message names the value and how to fix it); it holds a password.

    Example:
        >>> plan = om.load_plan("shop.yaml")
    """
    import yaml

    shape = Shape(os.fspath(path))
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        shape.fail(f"does not exist; save one with plan.save({shape.where!r})")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f"line {mark.line + 1}: " if mark is not None else ""
        shape.fail(
            f"is not valid YAML ({line}{getattr(exc, 'problem', None)}); fix it, or save the plan again"
        )
    top = shape.mapping(data, "the file", _TOP)
    if top.get("version") != VERSION:
        shape.fail(f"version {top.get('version')!r} is not {VERSION}; save the plan again with this version")
    source = shape.source(shape.mapping(top.get("source"), "source"))
    schema = top.get("target_schema")
    if schema is not None:
        shape.checked("target_schema", lambda: check_name(shape.text(schema, "target_schema"), what="Schema"))
    planned = [shape.table(entry, i) for i, entry in enumerate(shape.list(top.get("tables"), "tables"))]
    seen: set[str] = set()
    for t in planned:
        if t.source in seen:
            shape.fail(f"table {t.source!r} is listed twice; keep one entry for it")
        seen.add(t.source)
    problems = [shape.text(p, "problem") for p in shape.list(top.get("problems", []), "problems")]
    return SourcePlan(source, schema, planned, problems)
