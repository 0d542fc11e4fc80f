"""The import direction of design.md §3, so the layering cannot silently erode.

``model, table_names, identifiers, errors <- landing_zone, storage <- pipeline <- api <- magics | widgets |
cli``, with the local mirror, the Fabric service surfaces and ``table_info`` beside ``pipeline``. The skins
(magics, panels, command line, demo) see the API only as a notebook does: through the package root. Every
import of every module counts, lazy ones inside functions and ``TYPE_CHECKING`` ones included: a cycle
hidden behind a lazy import is still a cycle. Inside ``pipeline`` its subpackages, one per job, follow a
direction of their own (``PIPELINE_ALLOWED``), and no module sits outside them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import openmirror_nb

PACKAGE = Path(openmirror_nb.__file__).parent
BASE = {"errors", "table_names", "identifiers", "model", "target", "runtime", "progress", "moved"}
BASE |= {"feed_options"}  # om.FeedOptions: a value like the model's, that every layer passes on
BASE |= {"secret_refs"}  # where a secret is kept (a variable's name, a Key Vault URL): sources, streams
BASE |= {"column_types"}  # a plan's declared types (issue 39): JDBC sources and Debezium streams apply them
SKINS = {"magics", "widgets", "cli", "demo", "grammar", "push_flags"}
SKIN_API = {"__init__", "errors"} | SKINS
# What each part of the package may import (besides itself).
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "table_names": {"errors"},
    "model": {"errors", "table_names"},
    "target": {"errors"},
    "runtime": {"errors"},
    "progress": {"errors", "model"},
    # the skins' verb table: choices from the root's Literal types, the push and stream flags
    "grammar": {"__init__", "errors", "push_flags"},
    # the push and stream verbs' flags (change feed, files) and the API keywords they make
    "push_flags": {"__init__", "errors"},
    "feed_options": {"errors", "model"},  # om.FeedOptions: a change feed's options, one value
    "_core": set(),
    "moved": set(),  # its __init__ only says what it is
    "secret_refs": {"errors"},
    "column_types": {"errors", "identifiers"},
    "identifiers": set(),  # quoting a name for Spark SQL: the pipeline, the mirror and sources share it
    "__main__": {"cli"},
    "storage": BASE,
    "landing_zone": BASE | {"storage"},
    "pipeline": BASE | {"storage", "landing_zone"},
    "mirror": BASE | {"storage", "landing_zone"},
    "fabric": BASE | {"storage", "landing_zone"},
    "table_info": BASE | {"storage", "landing_zone"},
    "status": BASE | {"storage", "landing_zone", "fabric", "mirror"},
    "schema_change": BASE | {"storage", "landing_zone", "pipeline", "fabric", "mirror", "status"},
    "keys": BASE | {"storage", "landing_zone", "pipeline"},
    # Many tables (issue 27): sources discovered into plans, with the push's checks and suggestions.
    "sources": BASE | {"storage", "landing_zone", "pipeline", "keys", "table_info"},
    # Streams (issue 26): foreachBatch sinks over the push pipeline.
    "streaming": BASE | {"storage", "landing_zone", "pipeline"},
    "api": BASE
    | {
        "storage",
        "landing_zone",
        "pipeline",
        "mirror",
        "fabric",
        "table_info",
        "status",
        "keys",
        "schema_change",
        "sources",
        "streaming",
    },
    # The skins use the public API only (issue 24): the package root (``openmirror_nb``, its names
    # in ``__all__``), the panels, each other, and the error family they catch and word.
    "demo": SKIN_API,
    "cli": SKIN_API,
    "magics": SKIN_API,
    "widgets": SKIN_API,
    "__init__": {
        "errors",
        "table_names",
        "model",
        "feed_options",
        "progress",
        "runtime",
        "api",
        "keys",
        "landing_zone",
        "mirror",
        "pipeline",
        "schema_change",
        "sources",
        "status",
        "streaming",
        "table_info",
        "widgets",
        "magics",
    },
}


PUBLIC_NAMES = set(openmirror_nb.__all__) - {"widgets"}


def _part(module: str) -> str:
    """The part a module belongs to: ``openmirror_nb.<part>...``, or for the internals
    ``openmirror_nb._core.<part>...``; the package root is ``__init__``."""
    parts = module.split(".")
    if len(parts) > 2 and parts[1] == "_core":
        return parts[2]
    return parts[1] if len(parts) > 1 else "__init__"


def _imports() -> dict[str, set[tuple[str, str]]]:
    """part -> {(imported part, where)} for every module of the package."""
    found: dict[str, set[tuple[str, str]]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        module = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        names: list[str] = []
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if node.module in ("openmirror_nb", "openmirror_nb._core"):
                    # a public name of the root is the root's; anything else is the module it names
                    names += [
                        node.module
                        if node.module == "openmirror_nb" and a.name in PUBLIC_NAMES
                        else f"{node.module}.{a.name}"
                        for a in node.names
                    ]
                else:
                    names.append(node.module)
            elif isinstance(node, ast.Import):
                names += [a.name for a in node.names]
        own = _part(module)
        targets = {
            (_part(n), module) for n in names if n == "openmirror_nb" or n.startswith("openmirror_nb.")
        }
        found.setdefault(own, set()).update((t, m) for t, m in targets if t != own)
    return found


def test_every_part_of_the_package_has_a_place():
    assert set(_imports()) <= set(ALLOWED), "a new top-level module needs a place in ALLOWED (design §3)"


def test_imports_follow_the_layers():
    wrong = sorted(
        f"{where} imports openmirror_nb.{target}"
        for part, edges in _imports().items()
        for target, where in edges
        if target not in ALLOWED.get(part, set())
    )
    assert wrong == []


def test_no_cycles_between_modules():
    """Module-level cycles (the old buckets <-> context one) stay gone, lazy imports included."""
    graph: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        module = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                base = node.module
                deps.add(base)
                deps.update(f"{base}.{a.name}" for a in node.names)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names)
        graph[module] = {d for d in deps if d.startswith("openmirror_nb.")}
    graph = {m: {d for d in deps if d in graph and d != m} for m, deps in graph.items()}
    packages = {m for m in graph if (PACKAGE.parent / m.replace(".", "/") / "__init__.py").exists()}
    # A package's __init__ re-exporting its own modules is not a cycle of theirs.
    graph = {m: deps - packages if m not in packages else deps for m, deps in graph.items()}
    cycles: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                cycles.append([*trail[trail.index(dep) :], dep] if dep in trail else [node, dep])
            elif dep not in state:
                visit(dep, [*trail, dep])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert cycles == []


# The pipeline by job: what each of its subpackages may import of the others (besides itself). A
# direction: no two import each other, so each job can be read (and tested) without those after it.
PIPELINE = "openmirror_nb._core.pipeline"
PIPELINE_ALLOWED: dict[str, set[str]] = {
    "inputs": set(),  # what db.push takes besides a Spark DataFrame (pandas, Arrow), made one
    "feeds": set(),  # change-feed conventions (an op column, Debezium) -> change rows
    "keystate": {"feeds"},  # row hashes, base and deltas, buckets, the snapshot diff, the stored state
    "push": {"feeds", "keystate"},  # one push: request, checks, flows, staging, progress, decision
    "delta": {"push"},  # Delta tables as a source: their reader, om.read_delta and db.sync_delta
}
# Imports against that direction that the layout has not removed yet, module by module, so that no
# other joins them unseen: key state reads and writes its files with the push's staging tools.
PIPELINE_AGAINST: dict[str, set[str]] = {
    # a change feed's delta is its staged files: their part names (PART_NAME) and read_staged
    "keystate.hashes": {"push.stage"},
    # the delta written beside the data files: StageContext, context.write_state, observed.counts
    "keystate.feed_state": {"push.context", "push.observed"},
}


def _pipeline_modules() -> dict[str, Path]:
    """``<subpackage>.<module>`` (``<subpackage>`` for its ``__init__``) -> file, for the pipeline."""
    root = PACKAGE / "_core" / "pipeline"
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _job(module: str) -> str:
    """The subpackage a pipeline module sits in (``""``: the pipeline's own ``__init__``)."""
    return module.split(".")[0]


def _pipeline_imports() -> set[tuple[str, str]]:
    """(importer, imported) between the pipeline's modules, lazy and ``TYPE_CHECKING`` ones too; a
    name imported from a package is the module of that name when there is one."""
    modules = _pipeline_modules()
    found = set()
    for module, path in modules.items():
        names: list[str] = []
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names += [
                    f"{node.module}.{a.name}"
                    if f"{node.module}.{a.name}".removeprefix(f"{PIPELINE}.") in modules
                    else node.module
                    for a in node.names
                ]
            elif isinstance(node, ast.Import):
                names += [a.name for a in node.names]
        found |= {(module, n.removeprefix(f"{PIPELINE}.")) for n in names if n.startswith(f"{PIPELINE}.")}
    return {(m, t) for m, t in found if m != t}


def test_the_pipeline_follows_its_jobs():
    order: list[str] = []  # the subpackages, each after all it imports
    while len(order) < len(PIPELINE_ALLOWED):
        ready = [j for j, deps in PIPELINE_ALLOWED.items() if j not in order and deps <= set(order)]
        assert ready, f"PIPELINE_ALLOWED is no direction: {sorted(set(PIPELINE_ALLOWED) - set(order))}"
        order += ready
    imports = _pipeline_imports()
    wrong = sorted(
        f"{PIPELINE}.{module} imports {PIPELINE}.{target}"
        for module, target in imports
        if _job(target) != _job(module)
        and _job(target) not in PIPELINE_ALLOWED.get(_job(module), set())
        and target not in PIPELINE_AGAINST.get(module, set())
    )
    assert wrong == []
    gone = sorted(
        f"{m} -> {t}" for m, targets in PIPELINE_AGAINST.items() for t in targets if (m, t) not in imports
    )
    assert gone == [], "an import against the direction is gone: take it out of PIPELINE_AGAINST"


def test_every_pipeline_module_sits_in_its_job():
    """No flat module under ``pipeline/`` but its ``__init__``: each sits in a listed subpackage."""
    root = PACKAGE / "_core" / "pipeline"
    homeless = sorted(
        path.relative_to(root).as_posix()
        for path in root.rglob("*.py")
        if path != root / "__init__.py" and path.relative_to(root).parts[0] not in PIPELINE_ALLOWED
    )
    assert homeless == [], "put the module in one of PIPELINE_ALLOWED's subpackages"
    assert sorted(p.parent.name for p in root.glob("*/__init__.py")) == sorted(PIPELINE_ALLOWED)


# The public boundary (design §3, issue 24): notebooks see only the package root and the panels.
PUBLIC = {"openmirror_nb", "openmirror_nb.widgets"}
NOTEBOOK_FOLDERS = ("samples", "notebooks", "widgets")


def _notebook_imports() -> set[tuple[str, str]]:
    """(notebook, module) for every import of openmirror_nb's modules in a notebook's code cells."""
    import json

    from IPython.core.inputtransformer2 import TransformerManager

    to_python = TransformerManager().transform_cell  # magics and shell lines become calls
    found = set()
    for folder in NOTEBOOK_FOLDERS:
        for nb in sorted((PACKAGE.parent / folder).glob("*.ipynb")):
            where = nb.relative_to(PACKAGE.parent).as_posix()
            for cell in json.loads(nb.read_text(encoding="utf-8"))["cells"]:
                if cell["cell_type"] != "code":
                    continue
                for node in ast.walk(ast.parse(to_python("".join(cell["source"])))):
                    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                        found.add((where, node.module))
                        if node.module == "openmirror_nb":  # a module taken from the root is no API
                            found.update(
                                (where, f"openmirror_nb.{a.name}")
                                for a in node.names
                                if a.name not in openmirror_nb.__all__
                            )
                    elif isinstance(node, ast.Import):
                        found.update((where, a.name) for a in node.names)
    return {(nb, m) for nb, m in found if m.split(".")[0] == "openmirror_nb"}


def test_notebooks_use_only_the_public_api():
    internal = sorted((nb, m) for nb, m in _notebook_imports() if m not in PUBLIC)
    assert internal == [], "use `import openmirror_nb as om` (or om.widgets)"


def test_internals_sit_behind_the_private_package():
    """Outside ``_core`` lie only the public API (root, panels, ``python -m``) and the two homes
    earlier versions documented, which now warn and forward (issue 24)."""
    public = sorted(
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*")
        if path.is_file()
        and "_core" not in path.relative_to(PACKAGE).parts
        and "__pycache__" not in path.parts
    )
    assert public == [
        "__init__.py",
        "__main__.py",
        "fabric.py",
        "landing_zone.py",
        "py.typed",
        "widgets/__init__.py",
    ]
