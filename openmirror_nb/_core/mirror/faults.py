"""Why a table stops replicating, worded the way the service words it (contract §7.5).

A ``TableFault`` is raised while a table's files are read or applied; the replicator turns it
into the table's ``Failed`` status, its ``errorCode`` and its ``errorMessage``.
"""

from __future__ import annotations

from typing import Literal

# errorCode values written to tables.json. The service's own texts carry
# "ErrorCode: InternalError, ErrorCode: InputValidationError" (contract §7.5).
INPUT_VALIDATION = "InputValidationError"
SCHEMA_CHANGE = "SchemaChangeNotSupported"
INTERNAL = "InternalError"

FaultKind = Literal["file", "metadata", "schema", "table", "internal"]
# Faults that only recreating the table folder clears.
STICKY_KINDS = ("schema", "table")

_DATA_PREFIX = (
    "We encountered an error while parsing data file being used, please fix the file and try again. "
    "The error is: "
)
_METADATA_PREFIX = (
    "We encountered an error while parsing metadata file being used, please fix the file and try "
    "again. The error is: "
)
_SUFFIX = ", ErrorCode: InternalError, ErrorCode: InputValidationError ArtifactId: {artifact}"


class TableFault(Exception):
    """A table cannot go on replicating until its publisher fixes something.

    Attributes:
        kind: ``file`` (fixed by replacing the file under the same name), ``metadata`` (fixed by
            fixing ``_metadata.json``), ``schema`` (fixed only by recreating the table folder) or
            ``table`` (the Delta table no longer matches what the mirror applied; fixed only by
            recreating the table folder) or ``internal`` (the mirror itself failed; retried on
            every pass).
        reason: What is wrong, in one sentence.
        file_name: The data file that failed, if any.
        sequence: Its sequence number, if the name is a 20-digit one.
    """

    def __init__(
        self,
        reason: str,
        *,
        kind: FaultKind = "file",
        file_name: str | None = None,
        sequence: int | None = None,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.kind: FaultKind = kind
        self.file_name = file_name
        self.sequence = sequence

    def for_file(self, file_name: str, sequence: int | None) -> TableFault:
        """The same fault, now naming the file it came from."""
        return TableFault(self.reason, kind=self.kind, file_name=file_name, sequence=sequence)

    @property
    def error_code(self) -> str:
        return {"schema": SCHEMA_CHANGE, "table": INTERNAL, "internal": INTERNAL}.get(
            self.kind, INPUT_VALIDATION
        )

    def message(self, *, artifact: str) -> str:
        """The full service-style error text for tables.json and ``TableRun.error``."""
        if self.kind == "table":
            return self.reason
        if self.kind == "internal":
            text = self.reason
        elif self.kind == "metadata" or (self.file_name is None and self.sequence is None):
            # Faults not tied to a data file (keyColumns changed) are about _metadata.json.
            text = f"{_METADATA_PREFIX}{self.reason}{_SUFFIX.format(artifact=artifact)}"
        else:
            text = f"{_DATA_PREFIX}Exception reading the data file. Exception: {self.reason}"
            text += _SUFFIX.format(artifact=artifact)
        if self.sequence is not None:
            return f"{text}, SequenceNumber: {self.sequence}"
        if self.file_name is not None:
            return f"{text}, FileName: {self.file_name}"
        return text
