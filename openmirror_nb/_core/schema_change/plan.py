"""``SchemaPlan``: how a DataFrame differs from a table as last pushed, and whether the mirror can
absorb it or the table must be reseeded (design §7, contract §5.3).

Classes of change:
- an added column: absorbed (published as is; the mirror adds it);
- a dropped nullable column: absorbed as NULLs (only a reseed removes it from the mirrored table);
- a dropped NOT NULL column, a type change, a rename (a dropped and an added column of the same
  type, offered as a rename, never assumed), a key change, a nullability tightening and any
  column change of a delimited-text table: reseed required.

Pure functions of schemas (Spark's JSON form): no Spark, no storage.
"""

from __future__ import annotations

import hashlib
import html
import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from openmirror_nb._core.landing_zone.reseed_journal import STEPS
from openmirror_nb._core.model import DelimitedTextOptions, TableOptions

ChangeKind = Literal[
    "added", "dropped", "type_changed", "renamed", "key_changed", "nullability_tightened", "delimited_changed"
]
Action = Literal["absorbed", "reseed"]


@dataclass(frozen=True)
class Change:
    """One difference: its kind, the column(s), before and after, what it takes, and why."""

    kind: ChangeKind
    column: str
    before: str
    after: str
    action: Action
    note: str


@dataclass(frozen=True)
class SchemaPlan:
    """What pushing ``df`` to ``table`` takes.

    Attributes:
        table: ``name`` or ``schema.name``.
        changes: Every difference, reseed-requiring ones first.
        keys: The key columns the table will have (the new ones for a key change).
        schema: ``df``'s schema as Spark JSON (the apply step checks it is given the same df).
        rows: Rows of ``df`` (what a reseed reloads).
        files: Files a reseed publishes (``rows`` over rows per file).
        rows_before: Rows in the table's key state before, when known.
        last_push_seconds: How long the table's initial load took, when recorded (what a
            reload of about the same size costs again).
    """

    table: str
    changes: tuple[Change, ...]
    keys: tuple[str, ...]
    schema: str
    rows: int
    files: int
    rows_before: int | None = None
    last_push_seconds: float | None = None
    options: TableOptions = field(default_factory=TableOptions)

    def to_doc(self) -> dict[str, Any]:
        """The plan as JSON values (a reseed journal keeps it, so a reseed outlives the kernel)."""
        return asdict(self)

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> SchemaPlan:
        options = dict(doc["options"])
        options["delimited"] = DelimitedTextOptions(**options["delimited"])
        return cls(
            **{
                **doc,
                "changes": tuple(Change(**c) for c in doc["changes"]),
                "keys": tuple(doc["keys"]),
                "options": TableOptions(**options),
            }
        )

    @property
    def needs_reseed(self) -> bool:
        """Whether any change needs the table dropped and reloaded."""
        return any(c.action == "reseed" for c in self.changes)

    @property
    def steps(self) -> tuple[str, ...]:
        """The steps of a reseed, in order: ``apply_schema_change``'s ``on_step`` numbers them from
        1, a ``ReseedError``'s ``step`` names the one that stopped it, and a resumed reseed goes
        on from there."""
        return STEPS

    @property
    def digest(self) -> str:
        """Identifies the plan (table, keys, schema): a reseed journal belongs to one plan."""
        text = json.dumps([self.table, list(self.keys), self.schema])
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    @property
    def summary(self) -> str:
        """One line: no change, absorbed changes, or the reseed needed and what it costs."""
        if not self.changes:
            return f"{self.table}: no schema change; push as usual."
        if not self.needs_reseed:
            return f"{self.table}: {len(self.changes)} change(s), all absorbed by the mirror; push as usual."
        cost = f"reload {self.rows:,} rows in {self.files:,} file(s)"
        if self.last_push_seconds is not None:
            cost += f" (the table's initial load took {self.last_push_seconds:.1f} s)"
        return (
            f"{self.table}: reseed required: {cost}. Meanwhile the mirrored table is gone, until the "
            "reload is mirrored."
        )

    def __repr__(self) -> str:
        lines = [f"SchemaPlan({self.summary})"]
        lines += [
            f"  {c.action:<8} {c.kind:<21} {c.column}: {c.before} -> {c.after}; {c.note}"
            for c in self.changes
        ]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td><b style='color:{'#c62828' if c.action == 'reseed' else '#2e7d32'}'>{c.action}</b></td>"
            f"<td>{html.escape(c.kind.replace('_', ' '))}</td><td><code>{html.escape(c.column)}</code></td>"
            f"<td>{html.escape(c.before)}</td><td>{html.escape(c.after)}</td><td>{html.escape(c.note)}</td></tr>"
            for c in self.changes
        )
        table = (
            "<table class='om-plan' cellpadding='3'><tr><th>takes</th><th>change</th><th>column</th>"
            f"<th>before</th><th>after</th><th></th></tr>{rows}</table>"
            if rows
            else ""
        )
        return f"<div class='om-plan'><b>{html.escape(self.summary)}</b>{table}</div>"


def classify(
    *,
    before: dict[str, Any],
    after: dict[str, Any],
    keys_before: tuple[str, ...],
    keys_after: tuple[str, ...],
    delimited: bool,
) -> tuple[Change, ...]:
    """The changes from schema ``before`` to ``after`` (Spark JSON dicts) and keys, worst first."""
    old = {f["name"]: f for f in before.get("fields", [])}
    new = {f["name"]: f for f in after.get("fields", [])}
    changes: list[Change] = []
    added = [n for n in new if n not in old]
    dropped = [n for n in old if n not in new]
    renamed: set[str] = set()
    for gone in dropped:
        twin = next((n for n in added if n not in renamed and _type(new[n]) == _type(old[gone])), None)
        if twin is not None:
            renamed.update((gone, twin))
            changes.append(
                Change(
                    "renamed",
                    f"{gone} -> {twin}",
                    f"{gone} {_type(old[gone])}",
                    f"{twin} {_type(new[twin])}",
                    "reseed",
                    "looks like a rename (same type); pushed as is, the old column would stay, NULL "
                    "from now on: a reseed retires it",
                )
            )
    for name in dropped:
        if name in renamed:
            continue
        nullable = bool(old[name].get("nullable", True))
        changes.append(
            Change(
                "dropped",
                name,
                _type(old[name]),
                "(gone)",
                "absorbed" if nullable and not delimited else "reseed",
                "new rows get NULL; only a reseed removes the column"
                if nullable
                else "a NOT NULL column cannot be left out: the mirror fails; keep it or reseed",
            )
        )
    for name in added:
        if name not in renamed:
            changes.append(
                Change(
                    "added",
                    name,
                    "(none)",
                    _type(new[name]),
                    "absorbed" if not delimited else "reseed",
                    "the mirror adds the column; earlier rows get NULL",
                )
            )
    for name in new:
        if name in old and _type(new[name]) != _type(old[name]):
            changes.append(
                Change(
                    "type_changed",
                    name,
                    _type(old[name]),
                    _type(new[name]),
                    "reseed",
                    "the mirror cannot change a column's type",
                )
            )
        elif name in old and old[name].get("nullable", True) and not new[name].get("nullable", True):
            changes.append(
                Change(
                    "nullability_tightened",
                    name,
                    "NULL allowed",
                    "NOT NULL",
                    "reseed",
                    "the mirror's column stays nullable; the contract leaves tightening undefined",
                )
            )
    if keys_after != keys_before:
        changes.append(
            Change(
                "key_changed",
                ", ".join(keys_after),
                ", ".join(keys_before),
                ", ".join(keys_after),
                "reseed",
                "keyColumns are fixed for the incarnation of a table",
            )
        )
    if delimited:
        changes = [
            c
            if c.action == "reseed"
            else Change(
                c.kind,
                c.column,
                c.before,
                c.after,
                "reseed",
                "a delimited-text SchemaDefinition cannot evolve",
            )
            for c in changes
        ]
    order = {"reseed": 0, "absorbed": 1}
    return tuple(sorted(changes, key=lambda c: order[c.action]))


def _type(field: dict[str, Any]) -> str:
    kind = field.get("type")
    return kind if isinstance(kind, str) else json.dumps(kind, sort_keys=True)


def make_plan(
    *,
    table: str,
    state_schema: str,
    keys_before: tuple[str, ...],
    df_schema: str,
    keys: tuple[str, ...] | None,
    delimited: bool,
    rows: int,
    rows_per_file: int,
    rows_before: int | None,
    options: TableOptions,
    last_push_seconds: float | None = None,
) -> SchemaPlan:
    """The plan for pushing a DataFrame of schema ``df_schema`` (Spark JSON) with ``keys`` (``None``:
    the table's) to a table last pushed with ``state_schema`` and ``keys_before``."""
    after_keys = tuple(keys) if keys else keys_before
    new = json.loads(df_schema)
    missing = [k for k in after_keys if k not in {f["name"] for f in new.get("fields", [])}]
    if missing:
        from openmirror_nb._core.errors import KeyColumnsError

        raise KeyColumnsError(
            f"Key column(s) {missing} of table {table!r} are not in the DataFrame; pass keys=[...] "
            "naming its new key columns."
        )
    changes = classify(
        before=json.loads(state_schema),
        after=new,
        keys_before=keys_before,
        keys_after=after_keys,
        delimited=delimited,
    )
    return SchemaPlan(
        table=table,
        changes=changes,
        keys=after_keys,
        schema=df_schema,
        rows=rows,
        files=max(1, -(-rows // rows_per_file)),
        rows_before=rows_before,
        options=options,
        last_push_seconds=last_push_seconds,
    )
