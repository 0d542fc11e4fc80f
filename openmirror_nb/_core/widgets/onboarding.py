"""``Onboarding``: put a DataFrame under a mirrored table, by mouse (design §2).

One ``VBox`` of Fabric-supported widgets only (no ``Output``): pick a source (namespace frames,
temp views, catalog tables) and see its rows; name the target table (``TargetTable``, checked as
typed); choose key columns from suggestions, with a live profile of them (``KeyChoice``); set the
file options (``PushOptions``); push, with the push's progress bar inside the panel and its
``PushResult`` at the end. Counting is done by ``om.suggest_keys`` and ``om.profile_keys``; errors
show as one line in the status line.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import ipywidgets as w

from openmirror_nb import KeyProfile, PushResult, WidgetProgress, profile_keys
from openmirror_nb import suggest_keys as suggest
from openmirror_nb._core.widgets.key_choice import KeyChoice
from openmirror_nb._core.widgets.panel import Panel
from openmirror_nb._core.widgets.push_options import PushOptions
from openmirror_nb._core.widgets.sources import Source, SourcePreview, list_sources, source_preview
from openmirror_nb._core.widgets.target_table import TargetTable

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from openmirror_nb import MirroredDatabase

_WIDE = {"description_width": "initial"}
_NO_SOURCE = ("(pick a source)", "")  # "" rather than None: a Dropdown shows nothing for None


class Onboarding(Panel):
    """Onboard a source as a mirrored table: source, target, keys, options, push.

    Args:
        db: The mirrored database.
        namespace: Where to look for Spark and pandas DataFrames (``%openmirror onboard`` passes
            the notebook's); default the running IPython's namespace, else none.
        spark: The session for views, tables and pandas conversion (default ``get_spark()``).
        push: Called to push (default ``db.push``); tests inject their own.
        sources: Called to list the sources (default: the namespace's frames, then the catalog's
            views and tables).

    Example:
        >>> om.widgets.Onboarding(db)
    """

    def __init__(
        self,
        db: MirroredDatabase,
        *,
        namespace: Mapping[str, Any] | None = None,
        spark: SparkSession | None = None,
        push: Callable[..., PushResult] | None = None,
        sources: Callable[[], list[Source]] | None = None,
    ) -> None:
        names = namespace if namespace is not None else _user_namespace()
        self._db = db
        self._push: Callable[..., PushResult] = push or db.push
        self._list_sources = sources or (lambda: list_sources(names, spark))
        self._callbacks: list[Callable[[PushResult], None]] = []
        self._pushing = False
        self._df: DataFrame | None = None
        self._preview: SourcePreview | None = None
        self._suggestions: list[tuple[str, ...]] = []
        self._profile: KeyProfile | None = None
        self._load_error: str | None = None
        self._profile_error: str | None = None
        self._result: PushResult | None = None

        self.header = w.HTML(f"<b>Onboard a table</b> into <code>{html.escape(str(db.target))}</code>")
        self.source_picker = w.Dropdown(
            description="Source", options=[_NO_SOURCE], style=_WIDE, layout=w.Layout(width="420px")
        )
        self.rescan_button = w.Button(description="Rescan", icon="refresh", tooltip="List the sources again")
        self.preview = w.HTML()
        self.target = TargetTable(db.describe)
        # not ``self.keys``: a widget's ``keys`` trait lists the traits it syncs
        self.key_choice = KeyChoice()
        self.key_select, self.suggest_note = self.key_choice.key_select, self.key_choice.suggest_note
        self.suggestions, self.profile = self.key_choice.suggestions, self.key_choice.profile
        self.options = PushOptions()
        self.push_button = w.Button(description="Push", icon="upload", button_style="primary", disabled=True)
        self.progress = WidgetProgress()
        self.result = w.HTML()
        super().__init__(
            [
                self.header,
                w.HBox([self.source_picker, self.rescan_button]),
                self.preview,
                self.target,
                self.key_choice,
                self.options,
                w.HBox([self.push_button, self.progress.widget]),
                self.result,
            ],
            css_class="openmirror-onboarding",
        )

        self.source_picker.observe(self._on_source, names="value")
        self.rescan_button.on_click(lambda _: self.rescan())
        self.target.on_change(self._on_target)
        self.key_choice.on_change(self._profile_keys)
        self.push_button.on_click(lambda _: self.push())
        self.rescan()

    # -- public surface -------------------------------------------------------------------------

    @property
    def sources(self) -> list[Source]:
        """Every source the picker offers: notebook DataFrames, temp views, catalog tables."""
        return [s for _, s in self.source_picker.options if isinstance(s, Source)]

    @property
    def source(self) -> Source | None:
        """The picked source, if any."""
        picked = self.source_picker.value
        return picked if isinstance(picked, Source) else None

    @property
    def key_columns(self) -> tuple[str, ...]:
        """The key columns selected for the push."""
        return self.key_choice.columns

    @property
    def suggested_keys(self) -> list[tuple[str, ...]]:
        """Columns, else pairs of columns, never NULL and unique in the picked source."""
        return list(self._suggestions)

    @property
    def key_profile(self) -> KeyProfile | None:
        """Uniqueness and NULL counts of the selected key columns, once profiled."""
        return self._profile

    @property
    def push_result(self) -> PushResult | None:
        """What the last push from the panel published, if it ran."""
        return self._result

    def on_push(self, callback: Callable[[PushResult], None]) -> None:
        """Call ``callback(result)`` after every successful push."""
        self._callbacks.append(callback)

    def rescan(self) -> None:
        """List the sources and the database's tables again, keeping the choices still there."""
        with self._guard("Listing the sources failed"):
            found = self._list_sources()
            keep = self.source
            with self._quiet():
                self.source_picker.options = [_NO_SOURCE, *((s.label, s) for s in found)]
                self.source_picker.value = keep if keep in found else ""
            if self.source is None:
                self._load(None)
            self.target.set_tables(self._db.tables())
            if not found:
                self._say("No DataFrames, views or tables found: make one, then Rescan.", error=True)

    def push(self) -> PushResult | None:
        """Push the source with the chosen table, keys and options; what went wrong shows in the
        status line (a refused push leaves the landing zone as it was)."""
        table = self.target.table
        if self._df is None or table is None or not self.key_columns:
            self._say(self._hint()[0], error=True)
            return None
        bar = self.progress.bar
        bar.value, bar.bar_style, self.progress.label.value, self.result.value = 0, "info", "", ""
        self.progress.events.clear()
        self._pushing = True
        self._render()
        self._say(f"Pushing to {table}…")
        result: PushResult | None = None
        try:
            with self._guard("Push failed"):
                result = self._push(
                    self._df,
                    table=table,
                    keys=list(self.key_columns),
                    progress=self.progress,
                    **self.options.push_arguments(new_table=self.target.existing is None),
                )
        finally:
            self._pushing = False
            self._render()
        # The bar's label held the whole outcome; the status line and the result say it now.
        self.progress.label.value = (
            "failed: see below" if result is None else f"done in {result.seconds:.1f} s"
        )
        if result is None:
            return None
        self._result = result
        self.result.value = f"<div style='line-height:1.4'>{result._repr_html_()}</div>"
        self.target.set_tables(self._db.tables())  # the table exists now: keys and format fixed
        self._say(f"Pushed {result._summary()}.")
        for callback in list(self._callbacks):
            callback(result)
        return result

    # -- handlers -------------------------------------------------------------------------------

    def _on_source(self, change: dict[str, Any]) -> None:
        if not self._rendering:
            self._load(self.source)

    def _on_target(self) -> None:
        """The target changed: an existing table's keys replace the choice, read-only."""
        info, columns = self.target.existing, [name for _, name in self.key_select.options]
        with self._quiet():
            if info is not None:
                self.key_choice.choose(tuple(k for k in info.keys if k in columns))
            elif self.key_select.disabled and self._preview is not None:
                self.key_choice.choose(())  # the keys were an earlier table's, not a choice
            self.options.fix_format(info.options.file_format if info else None)
        self._profile_keys()

    # -- steps ----------------------------------------------------------------------------------

    def _load(self, source: Source | None) -> None:
        self._df, self._preview, self._suggestions = None, None, []
        self._profile = self._load_error = None
        if source is not None:
            with self._guard(f"Reading {source.name} failed", keep=True) as failed:
                df = source.load()
                self._preview = source_preview(df)
                self._suggestions = suggest(df)
                self._df = df
            self._load_error = failed[0] if failed else None
        self.key_choice.offer(self._preview.columns if self._preview else ())
        if source is not None and self._df is not None:
            self.target.follow_source(source.name)  # calls _on_target
        else:
            self._on_target()

    def _profile_keys(self) -> None:
        info = self.target.existing
        keys = info.keys if info is not None else self.key_columns
        current = self._profile
        if current is None or current.keys != keys:  # the same keys of the same source: counted
            self._profile = self._profile_error = None
            if self._df is not None and keys:
                with self._guard("Profiling the keys failed", keep=True) as failed:
                    self._profile = profile_keys(self._df, keys)
                self._profile_error = failed[0] if failed else None
        self._render()
        text, error = self._hint()
        self._say(text, error=error)

    # -- rendering ------------------------------------------------------------------------------

    def _render(self) -> None:
        fixed = self.target.existing is not None
        with self._quiet():
            self.preview.value = self._preview._repr_html_() if self._preview else ""
            self.key_choice.show(
                suggestions=self._suggestions,
                profile=self._profile,
                loaded=self._preview is not None,
                fixed=fixed,
            )
            # a profile that failed (an existing table's key missing from the source) blocks it too
            ready = self._df is not None and self.target.table is not None and bool(self.key_columns)
            ready = ready and self._profile_error is None
            self.push_button.disabled = self._pushing or not ready
            self.push_button.description = "Pushing…" if self._pushing else "Push"

    def _hint(self) -> tuple[str, bool]:
        """What is wrong (and ``True``), else what to do next or what Push will do."""
        error = self._load_error or self.target.error or self._profile_error
        if error:
            return error, True
        if self.source is None or self._df is None:
            return "Pick a source.", False
        if self.target.table is None:
            return "Name the target table.", False
        if not self.key_columns:
            return "Choose the key columns (a suggestion, or columns from the list).", False
        if self._profile is not None and not self._profile.unique:
            problem = self._profile._problems()[0]
            return f"Keys {', '.join(self.key_columns)} do not identify every row: {problem}.", True
        what = "a snapshot diff" if self.target.existing is not None else "the initial load"
        return f"Ready: Push publishes {what} of {self.source.name} to {self.target.table}.", False


def _user_namespace() -> Mapping[str, Any]:
    try:
        from IPython import get_ipython
    except ImportError:
        return {}
    shell = get_ipython()
    return shell.user_ns if shell is not None else {}
