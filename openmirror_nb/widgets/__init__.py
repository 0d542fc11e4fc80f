"""Notebook panels (ipywidgets): ``MonitorPane``, ``Onboarding``, ``SchemaWizard``,
``SourcePlanner``. Each is one ``VBox`` laid out from the API's results; ``import openmirror_nb``
does not load this package, ``om.widgets`` does."""

from __future__ import annotations

from openmirror_nb._core.errors import MissingDependencyError

try:
    import ipywidgets  # noqa: F401  (only to turn its absence into a clear error)
except ImportError:  # pragma: no cover - the dev environment has it
    raise MissingDependencyError(
        "The panels need ipywidgets: pip install 'openmirror-nb[notebook]' (Fabric notebooks have it)."
    ) from None

from openmirror_nb._core.widgets.monitor import MonitorPane
from openmirror_nb._core.widgets.onboarding import Onboarding
from openmirror_nb._core.widgets.schema_wizard import SchemaWizard
from openmirror_nb._core.widgets.source_planner import SourcePlanner

__all__ = ["MonitorPane", "Onboarding", "SchemaWizard", "SourcePlanner"]
