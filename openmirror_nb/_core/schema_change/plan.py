"""``SchemaPlan``: how a DataFrame differs from a table as last pushed (the changes
``changes.classify`` finds), whether the mirror can absorb it or the table must be reseeded, and
what a reseed costs (design §7, contract §5.3). No Spark, no storage: ``make_plan`` is given the
schemas, keys and row counts.
"""

from __future__ import annotations

import hashlib
import html
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from openmirror_nb._core.landing_zone.reseed_journal import STEPS
from openmirror_nb._core.model import DelimitedTextOptions, TableOptions
from openmirror_nb._core.schema_change.changes import Change, classify


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
