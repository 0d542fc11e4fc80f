"""The YAML text of a saved plan: a header saying what to edit, then the plan's values, key
lists on one line. ``SourcePlan.save`` writes it, ``load_plan`` reads it."""

from __future__ import annotations

from typing import Any

VERSION = 1
HEADER = """\
# An openmirror_nb source plan (db.plan_sources); load it with om.load_plan(path).
# Per table, edit: table (the mirrored name), keys (write key_origin: declared with keys you
# choose), strategy (snapshot | delta_sync | incremental | append), watermark (the column
# incremental and append read past), detect_deletes, enabled, types (column: decimal(p,s) or
# string, for a column no Spark type holds whole), freshness_goal (seconds; db.status warns
# past it). Problems say what to fix; notes say what the planner assumed and what to do about
# it (planning again writes both anew).
# No password is saved: the source names where it is (password_env or password_secret).
"""
UNSAVED = """\
# The source's password (or a secret property) was given as a value and is not saved: add
# password_env: NAME (an environment variable holding it) or password_secret: <Key Vault
# secret URL> under source.
"""


def plan_text(body: dict[str, Any], *, unsaved: bool) -> str:
    """``body`` (the plan as plain values) as YAML under the header; ``unsaved``: say that a
    secret given as a value was left out."""
    import yaml

    text = yaml.dump(body, Dumper=_dumper(), sort_keys=False, allow_unicode=True, width=100)
    return HEADER + (UNSAVED if unsaved else "") + text


class Flow(list[str]):
    """A list YAML writes on one line (``keys: [order_id, line_no]``)."""


def _dumper() -> type:
    import yaml

    class Dumper(yaml.SafeDumper):
        """YAML's safe writer, with ``Flow`` lists on one line."""

    def flow(dumper: yaml.SafeDumper, data: Flow) -> Any:
        return dumper.represent_sequence("tag:yaml.org,2002:seq", list(data), flow_style=True)

    Dumper.add_representer(Flow, flow)
    return Dumper
