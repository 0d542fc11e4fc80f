"""Write a run of prepared files into the table's Delta folder with ``deltalake``: one commit.

Inserts only → an append; anything else → one MERGE whose source holds a delete row per touched
key and the rows to add. Each commit carries an app transaction (``txn``) with the mirror's batch
number and, in its commit info, the files it applied, so a crash between the Delta commit and the
mirror's own state file is repaired from the table itself instead of applying a file twice.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, Field, Transaction, write_deltalake

from openmirror_nb._core.identifiers import quoted
from openmirror_nb._core.mirror.changes import ChangePlan, PreparedFile, plan_changes
from openmirror_nb._core.mirror.columns import align, canonical_type
from openmirror_nb._core.mirror.delta_read import arrow_schema

APP_ID = "openmirror_nb._core.mirror"
COMMIT_KEY = "openmirror.mirror"
_FLAG = "__openmirror_apply__"


def table_schema(table_dir: Path) -> pa.Schema | None:
    """The Delta table's schema in canonical Arrow types, or ``None`` if there is no table."""
    if not DeltaTable.is_deltatable(str(table_dir)):
        return None
    stored = arrow_schema(DeltaTable(str(table_dir)))
    return pa.schema([pa.field(f.name, canonical_type(f.name, f.type), f.nullable) for f in stored])


def applied_batch(table_dir: Path) -> int | None:
    """The batch number of the mirror's last commit to the table (``None``: none, or no table)."""
    if not DeltaTable.is_deltatable(str(table_dir)):
        return None
    version = DeltaTable(str(table_dir)).transaction_version(APP_ID)
    return None if version is None else int(version)


def committed_batches(table_dir: Path, *, after: int) -> list[dict[str, Any]]:
    """The bookkeeping of every mirror commit with a batch number above ``after``, oldest first."""
    found = []
    for entry in DeltaTable(str(table_dir)).history():
        raw = entry.get(COMMIT_KEY)
        if isinstance(raw, str):
            info = json.loads(raw)
            if int(info.get("batch", 0)) > after:
                found.append(info)
    return sorted(found, key=lambda i: int(i["batch"]))


@dataclass(frozen=True)
class Applied:
    """What one commit did to the table."""

    rows_written: int
    rows_removed: int


def apply_files(
    table_dir: Path,
    files: list[PreparedFile],
    *,
    schema: pa.Schema,
    keys: tuple[str, ...],
    batch: int,
    info: dict[str, Any],
) -> Applied:
    """Apply ``files`` (in order) to the Delta table at ``table_dir`` in one commit."""
    data = pa.concat_tables([align(f.data, schema) for f in files])
    markers = np.concatenate([f.markers for f in files])
    plan = plan_changes(data, markers, keys)
    props = CommitProperties(
        custom_metadata={COMMIT_KEY: json.dumps({**info, "batch": batch})},
        app_transactions=[Transaction(app_id=APP_ID, version=batch)],
    )
    if not DeltaTable.is_deltatable(str(table_dir)):
        # A key that is not in the table yet cannot be deleted or replaced: the net rows are all.
        table_dir.mkdir(parents=True, exist_ok=True)
        write_deltalake(str(table_dir), plan.rows, mode="append", commit_properties=props)
        return Applied(plan.rows.num_rows, 0)
    table = DeltaTable(str(table_dir))
    current = arrow_schema(table)
    added = [f for f in schema if current.get_field_index(f.name) < 0]
    if added:
        # New columns are added first (older rows NULL); delta-rs' merge_schema loses values of
        # non-nullable columns in copied rows (deltalake 1.6.6), so it is not used.
        table.alter.add_columns([Field.from_arrow(f.with_nullable(True)) for f in added])
        table = DeltaTable(str(table_dir))
    if plan.touched is None:
        write_deltalake(table, plan.rows, mode="append", commit_properties=props)
        return Applied(plan.rows.num_rows, 0)
    return _merge(table, plan, schema=schema, keys=keys, props=props)


def _merge(
    table: DeltaTable, plan: ChangePlan, *, schema: pa.Schema, keys: tuple[str, ...], props: CommitProperties
) -> Applied:
    assert plan.touched is not None
    removals = align(plan.touched, schema, nullable=True)
    additions = align(plan.rows, schema, nullable=True)
    source = pa.concat_tables(
        [
            removals.append_column(_FLAG, pa.array(np.zeros(removals.num_rows, np.int8))),
            additions.append_column(_FLAG, pa.array(np.ones(additions.num_rows, np.int8))),
        ]
    )
    # Removal rows match every current row of their key; rows to add never match, so each key
    # ends up with exactly the rows the plan adds for it.
    on = " AND ".join(f"t.{quoted(k)} = s.{quoted(k)}" for k in keys)
    result = (
        table.merge(
            source=source,
            predicate=f"{on} AND s.{quoted(_FLAG)} = 0",
            source_alias="s",
            target_alias="t",
            commit_properties=props,
        )
        .when_matched_delete()
        .when_not_matched_insert_all(predicate=f"s.{quoted(_FLAG)} = 1", except_cols=[_FLAG])
        .execute()
    )
    if not result["num_target_files_added"] and not result["num_target_files_removed"]:
        # delta-rs skips the commit of a MERGE that changed nothing (deletes of absent keys);
        # an empty append still records the batch's txn and bookkeeping.
        write_deltalake(table, schema.empty_table(), mode="append", commit_properties=props)
    return Applied(int(result["num_target_rows_inserted"]), int(result["num_target_rows_deleted"]))
