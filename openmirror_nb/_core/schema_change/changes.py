"""``classify``: the changes from one schema (Spark's JSON form) and key set to another, and what
each takes (contract §5.3):
- an added column: absorbed (published as is; the mirror adds it);
- a dropped nullable column: absorbed as NULLs (only a reseed removes it from the mirrored table);
- a dropped NOT NULL column, a type change, a rename (a dropped and an added column of the same
  type, offered as a rename, never assumed), a key change, a nullability tightening and any
  column change of a delimited-text table: reseed required.

Pure functions of schemas: no Spark, no storage.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any, Literal

ChangeKind = Literal[
    "added", "dropped", "type_changed", "renamed", "key_changed", "nullability_tightened", "delimited_changed"
]
Action = Literal["absorbed", "reseed"]
Field = dict[str, Any]


@dataclass(frozen=True)
class Change:
    """One difference: its kind, the column(s), before and after, what it takes, and why."""

    kind: ChangeKind
    column: str
    before: str
    after: str
    action: Action
    note: str


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
    renames = _renames(old, new)
    renamed = {name for pair in renames for name in pair}
    changes = [_renamed(old[gone], new[twin]) for gone, twin in renames]
    changes += [_dropped(old[n], delimited) for n in old if n not in new and n not in renamed]
    changes += [_added(new[n], delimited) for n in new if n not in old and n not in renamed]
    changes += [c for n in new if n in old for c in _altered(old[n], new[n])]
    if keys_after != keys_before:
        changes.append(_key_changed(keys_before, keys_after))
    if delimited:
        # A delimited-text table's SchemaDefinition is fixed: even what the mirror absorbs elsewhere
        # takes a reseed here.
        changes = [
            c if c.action == "reseed" else replace(c, action="reseed", note=_DELIMITED_FIXED) for c in changes
        ]
    order = {"reseed": 0, "absorbed": 1}
    return tuple(sorted(changes, key=lambda c: order[c.action]))


_DELIMITED_FIXED = "a delimited-text SchemaDefinition cannot evolve"


def _renames(old: dict[str, Field], new: dict[str, Field]) -> list[tuple[str, str]]:
    """(dropped, added) pairs of the same type, each added column in one pair at most."""
    added = [n for n in new if n not in old]
    pairs: list[tuple[str, str]] = []
    for gone in (n for n in old if n not in new):
        taken = {twin for _, twin in pairs}
        twin = next((n for n in added if n not in taken and _type(new[n]) == _type(old[gone])), None)
        if twin is not None:
            pairs.append((gone, twin))
    return pairs


def _renamed(gone: Field, twin: Field) -> Change:
    return Change(
        "renamed",
        f"{gone['name']} -> {twin['name']}",
        f"{gone['name']} {_type(gone)}",
        f"{twin['name']} {_type(twin)}",
        "reseed",
        "looks like a rename (same type); pushed as is, the old column would stay, NULL "
        "from now on: a reseed retires it",
    )


def _dropped(gone: Field, delimited: bool) -> Change:
    nullable = bool(gone.get("nullable", True))
    return Change(
        "dropped",
        gone["name"],
        _type(gone),
        "(gone)",
        "absorbed" if nullable and not delimited else "reseed",
        "new rows get NULL; only a reseed removes the column"
        if nullable
        else "a NOT NULL column cannot be left out: the mirror fails; keep it or reseed",
    )


def _added(field: Field, delimited: bool) -> Change:
    return Change(
        "added",
        field["name"],
        "(none)",
        _type(field),
        "absorbed" if not delimited else "reseed",
        "the mirror adds the column; earlier rows get NULL",
    )


def _altered(old: Field, new: Field) -> list[Change]:
    """A kept column's type change or, failing that, its nullability tightening (or nothing)."""
    name = new["name"]
    if _type(new) != _type(old):
        note = "the mirror cannot change a column's type"
        return [Change("type_changed", name, _type(old), _type(new), "reseed", note)]
    if old.get("nullable", True) and not new.get("nullable", True):
        return [
            Change(
                "nullability_tightened",
                name,
                "NULL allowed",
                "NOT NULL",
                "reseed",
                "the mirror's column stays nullable; the contract leaves tightening undefined",
            )
        ]
    return []


def _key_changed(keys_before: tuple[str, ...], keys_after: tuple[str, ...]) -> Change:
    return Change(
        "key_changed",
        ", ".join(keys_after),
        ", ".join(keys_before),
        ", ".join(keys_after),
        "reseed",
        "keyColumns are fixed for the incarnation of a table",
    )


def _type(field: Field) -> str:
    kind = field.get("type")
    return kind if isinstance(kind, str) else json.dumps(kind, sort_keys=True)
