"""MkDocs hook: fills the generated parts of the reference pages when the site is built, so they
cannot drift from the code: ``{{ magic_help }}`` / ``{{ cli_help }}`` (the parsers' own help),
``{{ api_reference }}`` / ``{{ errors_reference }}`` (every name in ``openmirror_nb.__all__``) and
``{{ widgets_reference }}`` (``openmirror_nb.widgets.__all__``) and ``{{ bench_summary }}``
(``bench/results/summary.json`` as committed)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _verbs(parser: argparse.ArgumentParser) -> str:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return "\n".join(
        f"### `{name}`\n\n```text\n{verb.format_help().strip()}\n```\n" for name, verb in sub.choices.items()
    )


def _objects(module: str, names: list[str]) -> str:
    return "\n".join(f"::: {module}.{name}\n" for name in names)


def _public() -> tuple[list[str], list[str]]:
    """(API names, error names) of the package root, in ``__all__`` order."""
    import openmirror_nb as om

    names = [n for n in om.__all__ if not n.startswith("_") and n != "widgets"]
    errors = [
        n
        for n in names
        if isinstance(getattr(om, n), type) and issubclass(getattr(om, n), om.OpenMirrorError)
    ]
    errors.sort(key=lambda n: (n != "OpenMirrorError", n))
    return [n for n in names if n not in errors], errors


def _machine(recorded: object) -> str:
    # Older result files recorded the machine as a dict (python, cpus, platform) or not at all.
    if isinstance(recorded, dict):
        return f"{recorded.get('cpus', '?')} cores, {recorded.get('platform', '')}".strip(", ")
    return str(recorded) if recorded else "not recorded"


def _bench() -> str:
    summary = json.loads((ROOT / "bench/results/summary.json").read_text(encoding="utf-8"))
    rows = [
        "| benchmark | figure | value | goal | met | written | machine |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, entry in sorted(summary["benchmarks"].items()):
        head = entry["headline"]
        detail = json.loads((ROOT / entry["result_file"]).read_text(encoding="utf-8"))
        where = _machine(detail.get("machine"))
        if detail.get("spark"):
            where += f", Spark {detail['spark']}"
        met = "yes" if head.get("met") else "**no**"
        rows.append(
            f"| `{name}` | {head['figure']} | {head['value']} | {head.get('goal', '')} | {met} "
            f"| {entry.get('result_written', '')} | {where} |"
        )
    return "\n".join(rows)


def on_page_markdown(markdown: str, **_: Any) -> str:
    if "{{ magic_help }}" in markdown:
        from openmirror_nb._core.magics.parser import build_parser

        markdown = markdown.replace("{{ magic_help }}", _verbs(build_parser()))
    if "{{ cli_help }}" in markdown:
        from openmirror_nb._core.cli import _parser

        markdown = markdown.replace("{{ cli_help }}", _verbs(_parser()))
    if "{{ api_reference }}" in markdown or "{{ errors_reference }}" in markdown:
        api, errors = _public()
        markdown = markdown.replace("{{ api_reference }}", _objects("openmirror_nb", api))
        markdown = markdown.replace("{{ errors_reference }}", _objects("openmirror_nb", errors))
    if "{{ widgets_reference }}" in markdown:
        import openmirror_nb.widgets as widgets

        markdown = markdown.replace(
            "{{ widgets_reference }}", _objects("openmirror_nb.widgets", list(widgets.__all__))
        )
    if "{{ bench_summary }}" in markdown:
        markdown = markdown.replace("{{ bench_summary }}", _bench())
    return markdown
