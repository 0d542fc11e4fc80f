"""The documentation site's promises that ``mkdocs build --strict`` does not check.

The API reference is generated from ``openmirror_nb.__all__`` (docs/hooks.py), so every public name
appears there; these tests make sure each one, and each public method and property of a public
class, says what it does, and that every page under docs/ is reachable from the navigation.
"""

from __future__ import annotations

import ast
import inspect
import itertools
from pathlib import Path

import openmirror_nb as om
import openmirror_nb.widgets as widgets

ROOT = Path(__file__).resolve().parent.parent


def _public() -> list[tuple[str, object]]:
    found = [(f"om.{n}", getattr(om, n)) for n in om.__all__ if not n.startswith("__") and n != "widgets"]
    return found + [(f"om.widgets.{n}", getattr(widgets, n)) for n in widgets.__all__]


def _undocumented(cls: type) -> set[str]:
    """Public methods and properties the package defines on ``cls`` with no docstring, here or on
    a base class it overrides (inherited ones from outside, such as Exception's or ipywidgets', are
    not ours to document)."""
    ours = [k for k in cls.__mro__ if k.__module__.startswith("openmirror_nb")]
    missing = set()
    for klass in ours:
        for name, value in vars(klass).items():
            if name.startswith("_") or not (inspect.isfunction(value) or isinstance(value, property)):
                continue
            docs = (getattr(vars(k).get(name), "__doc__", None) for k in ours if name in vars(k))
            if not any((d or "").strip() for d in docs):
                missing.add(f"{klass.__name__}.{name}")
    return missing


def _attribute_docs() -> dict[str, str]:
    """name -> the string right under a module-level assignment of ``openmirror_nb._core``: how
    a constant or a type alias is documented (mkdocstrings shows it; ``__doc__`` cannot hold it)."""
    found = {}
    for path in (ROOT / "openmirror_nb" / "_core").rglob("*.py"):
        body = ast.parse(path.read_text(encoding="utf-8")).body
        for stmt, after in itertools.pairwise(body):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else []
            if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
                found.update((t.id, str(after.value.value)) for t in targets if isinstance(t, ast.Name))
    return found


def test_every_public_name_has_a_docstring():
    values = _attribute_docs()

    def doc(name: str, obj: object) -> str:
        if inspect.isclass(obj) or inspect.isroutine(obj):
            return inspect.getdoc(obj) or ""
        return values.get(name.rpartition(".")[2], "")  # a constant or a type alias

    missing = [name for name, obj in _public() if not doc(name, obj).strip()]
    assert not missing, f"public names without a docstring: {missing}"


def test_every_public_method_and_property_has_a_docstring():
    missing = sorted({name for _, obj in _public() if inspect.isclass(obj) for name in _undocumented(obj)})
    assert not missing, f"public methods or properties without a docstring: {missing}"


def test_every_page_is_in_the_navigation():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = sorted(p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md"))
    assert pages, "docs/ holds no page"
    orphans = [p for p in pages if f": {p}" not in nav]
    assert not orphans, f"pages under docs/ that the navigation (mkdocs.yml nav) does not list: {orphans}"


def test_every_sample_notebook_has_a_page():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    missing = [
        nb.name for nb in sorted((ROOT / "samples").glob("*.ipynb")) if f"samples/{nb.name}" not in nav
    ]
    assert not missing, f"samples without a page in mkdocs.yml nav: {missing}"
