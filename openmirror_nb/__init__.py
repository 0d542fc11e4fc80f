"""openmirror_nb: mirror Spark DataFrames into Microsoft Fabric open-mirrored databases.

``import openmirror_nb`` stays light: pyspark, ipywidgets, IPython and azure load only when used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.errors import (
    ChangeFeedError,
    ConfigError,
    CredentialError,
    InvalidNameError,
    KeyColumnsError,
    LandingZoneError,
    LockTimeoutError,
    MetricsTimeoutError,
    MirrorError,
    MirrorWaitTimeoutError,
    MissingDependencyError,
    NotSupportedError,
    OpenMirrorError,
    PathExistsError,
    PushCancelledError,
    ReseedError,
    SchemaChangeError,
    SourceError,
    StorageError,
    UnsupportedTypeError,
)
from openmirror_nb._core.feed_options import FeedOptions
from openmirror_nb._core.model import (
    DEFAULT_ROWS_PER_FILE,
    Compression,
    Convention,
    DelimitedTextOptions,
    DropResult,
    FileFormat,
    PartnerInfo,
    PushMode,
    PushResult,
    Recovery,
    RowMarker,
    SyncResult,
    TableOptions,
)
from openmirror_nb._core.progress import (
    Cancelled,
    Committing,
    Finished,
    ProgressEvent,
    Publishing,
    PushFailed,
    Staging,
    TextProgress,
    Validating,
    WaitingForLock,
    WidgetProgress,
)
from openmirror_nb._core.table_names import check_table_name

if TYPE_CHECKING:
    from openmirror_nb import widgets
    from openmirror_nb._core.api import MirroredDatabase, connect
    from openmirror_nb._core.api.live import LivePlan
    from openmirror_nb._core.keys import KeyProfile, profile_keys, suggest_keys
    from openmirror_nb._core.landing_zone import Blocker
    from openmirror_nb._core.landing_zone.table_scan import DataFileInfo, TableScan
    from openmirror_nb._core.mirror import LocalMirror, MirrorRun, SyncLimits, TableRun
    from openmirror_nb._core.mirror.key_versions import KeyHistory, KeyVersion
    from openmirror_nb._core.pipeline.delta.sync import read_delta
    from openmirror_nb._core.pipeline.inputs.arrow_input import arrow_to_spark
    from openmirror_nb._core.runtime import get_spark, is_fabric
    from openmirror_nb._core.schema_change import Change, ReseedResult, SchemaPlan
    from openmirror_nb._core.sources import (
        Catalog,
        DeltaFolder,
        Jdbc,
        KeyOrigin,
        PlannedTable,
        PlanRun,
        PlanStrategy,
        PlanTableRun,
        RunStatus,
        Source,
        SourcePlan,
        SourceTable,
        Strategy,
        get_strategy,
        load_plan,
        register_source,
        register_strategy,
        strategy_names,
    )
    from openmirror_nb._core.sources.pg_cdc import Cdc, CdcCheck, worker_settings
    from openmirror_nb._core.status import Reconciliation, ReplicatorStatus, StatusReport, TableStatus
    from openmirror_nb._core.status.freshness_records import (
        Freshness,
        FreshnessFigure,
        FreshnessPoint,
        FreshnessStage,
    )
    from openmirror_nb._core.streaming.kafka_source import EventHubs, Kafka
    from openmirror_nb._core.streaming.sink import BatchSink
    from openmirror_nb._core.streaming.stream import MirrorStream
    from openmirror_nb._core.table_info import ColumnInfo, TableInfo

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_ROWS_PER_FILE",
    "BatchSink",
    "Blocker",
    "Cancelled",
    "Catalog",
    "Cdc",
    "CdcCheck",
    "Change",
    "ChangeFeedError",
    "ColumnInfo",
    "Committing",
    "Compression",
    "ConfigError",
    "Convention",
    "CredentialError",
    "DataFileInfo",
    "DelimitedTextOptions",
    "DeltaFolder",
    "DropResult",
    "EventHubs",
    "FeedOptions",
    "FileFormat",
    "Finished",
    "Freshness",
    "FreshnessFigure",
    "FreshnessPoint",
    "FreshnessStage",
    "InvalidNameError",
    "Jdbc",
    "Kafka",
    "KeyColumnsError",
    "KeyHistory",
    "KeyOrigin",
    "KeyProfile",
    "KeyVersion",
    "LandingZoneError",
    "LivePlan",
    "LocalMirror",
    "LockTimeoutError",
    "MetricsTimeoutError",
    "MirrorError",
    "MirrorRun",
    "MirrorStream",
    "MirrorWaitTimeoutError",
    "MirroredDatabase",
    "MissingDependencyError",
    "NotSupportedError",
    "OpenMirrorError",
    "PartnerInfo",
    "PathExistsError",
    "PlanRun",
    "PlanStrategy",
    "PlanTableRun",
    "PlannedTable",
    "ProgressEvent",
    "Publishing",
    "PushCancelledError",
    "PushFailed",
    "PushMode",
    "PushResult",
    "Reconciliation",
    "Recovery",
    "ReplicatorStatus",
    "ReseedError",
    "ReseedResult",
    "RowMarker",
    "RunStatus",
    "SchemaChangeError",
    "SchemaPlan",
    "Source",
    "SourceError",
    "SourcePlan",
    "SourceTable",
    "Staging",
    "StatusReport",
    "StorageError",
    "Strategy",
    "SyncLimits",
    "SyncResult",
    "TableInfo",
    "TableOptions",
    "TableRun",
    "TableScan",
    "TableStatus",
    "TextProgress",
    "UnsupportedTypeError",
    "Validating",
    "WaitingForLock",
    "WidgetProgress",
    "__version__",
    "arrow_to_spark",
    "check_table_name",
    "connect",
    "get_spark",
    "get_strategy",
    "is_fabric",
    "load_plan",
    "profile_keys",
    "read_delta",
    "register_source",
    "register_strategy",
    "strategy_names",
    "suggest_keys",
    "widgets",
    "worker_settings",
]

# name -> the module that defines it; loaded on first use.
_LAZY = {
    "arrow_to_spark": "openmirror_nb._core.pipeline.inputs.arrow_input",
    "connect": "openmirror_nb._core.api",
    "MirroredDatabase": "openmirror_nb._core.api",
    "get_spark": "openmirror_nb._core.runtime",
    "is_fabric": "openmirror_nb._core.runtime",
    "LocalMirror": "openmirror_nb._core.mirror",
    "MirrorRun": "openmirror_nb._core.mirror",
    "TableRun": "openmirror_nb._core.mirror",
    "SyncLimits": "openmirror_nb._core.mirror",
    "KeyHistory": "openmirror_nb._core.mirror.key_versions",
    "KeyVersion": "openmirror_nb._core.mirror.key_versions",
    "Change": "openmirror_nb._core.schema_change",
    "SchemaPlan": "openmirror_nb._core.schema_change",
    "ReseedResult": "openmirror_nb._core.schema_change",
    "StatusReport": "openmirror_nb._core.status",
    "TableStatus": "openmirror_nb._core.status",
    "ReplicatorStatus": "openmirror_nb._core.status",
    "Reconciliation": "openmirror_nb._core.status",
    "Freshness": "openmirror_nb._core.status.freshness_records",
    "FreshnessFigure": "openmirror_nb._core.status.freshness_records",
    "FreshnessPoint": "openmirror_nb._core.status.freshness_records",
    "FreshnessStage": "openmirror_nb._core.status.freshness_records",
    "KeyProfile": "openmirror_nb._core.keys",
    "profile_keys": "openmirror_nb._core.keys",
    "suggest_keys": "openmirror_nb._core.keys",
    "TableInfo": "openmirror_nb._core.table_info",
    "TableScan": "openmirror_nb._core.landing_zone.table_scan",
    "DataFileInfo": "openmirror_nb._core.landing_zone.table_scan",
    "Blocker": "openmirror_nb._core.landing_zone",
    "ColumnInfo": "openmirror_nb._core.table_info",
    "read_delta": "openmirror_nb._core.pipeline.delta.sync",
    "Catalog": "openmirror_nb._core.sources",
    "DeltaFolder": "openmirror_nb._core.sources",
    "Jdbc": "openmirror_nb._core.sources",
    "KeyOrigin": "openmirror_nb._core.sources",
    "PlannedTable": "openmirror_nb._core.sources",
    "SourcePlan": "openmirror_nb._core.sources",
    "SourceTable": "openmirror_nb._core.sources",
    "Strategy": "openmirror_nb._core.sources",
    "load_plan": "openmirror_nb._core.sources",
    "Source": "openmirror_nb._core.sources",
    "PlanStrategy": "openmirror_nb._core.sources",
    "register_source": "openmirror_nb._core.sources",
    "register_strategy": "openmirror_nb._core.sources",
    "get_strategy": "openmirror_nb._core.sources",
    "strategy_names": "openmirror_nb._core.sources",
    "BatchSink": "openmirror_nb._core.streaming.sink",
    "MirrorStream": "openmirror_nb._core.streaming.stream",
    "Kafka": "openmirror_nb._core.streaming.kafka_source",
    "EventHubs": "openmirror_nb._core.streaming.kafka_source",
    "PlanRun": "openmirror_nb._core.sources",
    "PlanTableRun": "openmirror_nb._core.sources",
    "RunStatus": "openmirror_nb._core.sources",
    "Cdc": "openmirror_nb._core.sources.pg_cdc",
    "CdcCheck": "openmirror_nb._core.sources.pg_cdc",
    "worker_settings": "openmirror_nb._core.sources.pg_cdc",
    "LivePlan": "openmirror_nb._core.api.live",
}


def __getattr__(name: str) -> Any:
    # The API and the mirror pull in pyarrow and deltalake, the panels ipywidgets: load them on
    # first use only.
    if name == "widgets":
        return importlib.import_module("openmirror_nb.widgets")
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'openmirror_nb' has no attribute {name!r}")


def __dir__() -> list[str]:
    # Tab completion lists dir(): show the public names, lazy ones included, and hide the helper
    # imports (annotations, Any, importlib, TYPE_CHECKING) and the submodules loaded so far.
    return sorted({*__all__, *(n for n in globals() if n.startswith("__") and n.endswith("__"))})


def load_ipython_extension(shell: Any) -> None:
    """``%load_ext openmirror_nb``: register the ``%openmirror`` magic."""
    importlib.import_module("openmirror_nb._core.magics").load_ipython_extension(shell)


def unload_ipython_extension(shell: Any) -> None:
    """``%unload_ext openmirror_nb``: stop the mirrors the magic started and unregister it."""
    importlib.import_module("openmirror_nb._core.magics").unload_ipython_extension(shell)
