"""Browser-test harness: a real JupyterLab in Debian's headless Chromium, driven by playwright.

Every ipywidgets panel of the project is tested the way a person uses it: the notebook opens in
JupyterLab, its cells run, the panel renders in the browser and clicks go through the widget comms
to the kernel and back. Screenshots are written to ``tests/ui/artifacts/`` for humans to look at;
a failing test also leaves ``FAILED-<test>.png`` there, and the report carries the tail of the
Jupyter server log and the browser console errors.

Fixtures (``tests/ui/conftest.py``, every test in ``tests/ui`` gets the ``ui`` marker):

- ``lab`` (package scope on tests/ui, so one per pytest session): the JupyterLab server, a
  :class:`Lab`; it and the browser stop once the last UI test is done.
- ``page`` (function): a fresh playwright ``Page`` (own browser context, 1400x1000). At the end
  of the test every kernel of the server is shut down, so tests never share a kernel.

A panel test::

    from playwright.sync_api import expect

    from tests.ui.lab import copy_notebook, open_notebook, run_all_cells, screenshot, widget


    def test_monitor_panel(lab, page):
        path = copy_notebook(lab, "widgets/monitor.ipynb")  # or write_notebook(lab, name, cells)
        open_notebook(page, lab, path)  # returns once the notebook is shown and its kernel idle
        run_all_cells(page, timeout=180_000)  # raises NotebookError with the traceback if a cell raised
        panel = widget(page, "openmirror-monitor")  # the panel's ``_dom_classes``
        expect(panel.locator(".widget-html").first).to_contain_text("3 tables")
        panel.get_by_role("button", name="Refresh").click()  # a real click: a comm round-trip
        expect(panel).to_contain_text("refreshed")
        screenshot(page, "monitor_panel", target=panel)  # tests/ui/artifacts/monitor_panel.png

Helpers: ``copy_notebook`` / ``write_notebook`` (put a notebook in the lab root, return its path),
``open_notebook``, ``run_all_cells``, ``notebook(page)`` (the notebook panel), ``cell_outputs_text``
(text of each code cell's outputs), ``widget(scope, dom_class)``, ``widget_button(scope, label)``,
``widgets_by_text(scope, text)``, ``toasts(page)``, ``screenshot(page, name, target=None)``. After
Run All the notebook is scrolled to its last cell (Lab scrolls inside the notebook, so a page
screenshot shows one viewport): pass ``target=`` (a locator, scrolled into view) to picture one
panel. ``lab.api("GET", "api/kernels")`` calls the server's REST API.

Use playwright's ``expect`` (it retries until its timeout) for everything that happens after a
click; never sleep. The kernel runs the venv's Python with the parent environment plus
``SPARK_LOCAL_IP=127.0.0.1``, in the notebook's folder inside ``lab.root_dir`` (a tmp dir), so
relative paths a notebook writes stay out of the repo.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Locator, Page, Playwright

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"

# Debian's package, installed by scripts/setup-env; playwright's own browser downloads are never used.
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",  # the sandbox needs user namespaces that containers usually lack
    "--disable-gpu",
    # The network is closed here: nothing may try to phone home (and time out doing so).
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1400, "height": 1000}

# Lab settings written to the server's own (tmp) user-settings dir. Each one removes something that
# slows a test down or covers what it looks at.
LAB_SETTINGS: dict[str, dict[str, Any]] = {
    # No "Would you like to get notified about official Jupyter news?" toast, no update check (no network here).
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/notebook-extension/tracker": {
        # A notebook without kernelspec metadata would otherwise open the kernel picker dialog.
        "autoStartDefaultKernel": True,
        # Every cell stays in the DOM, so waits and locators see cells scrolled out of view.
        "windowingMode": "none",
    },
    # Tests never save; autosave would only race with tests that rewrite a notebook file.
    "@jupyterlab/docmanager-extension/plugin": {"autosave": False},
}

# Lab's page config (read from JUPYTER_CONFIG_DIR/labconfig/page_config.json). Every page load would
# otherwise run a build check (seconds of server CPU on a 2-core machine) that could raise a
# "Build recommended" dialog; the prebuilt extensions of the venv need no build.
LAB_PAGE_CONFIG: dict[str, Any] = {"buildCheck": False, "buildAvailable": False}

KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
SERVER_START_TIMEOUT = 90.0
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class LabError(RuntimeError):
    """The harness could not do what was asked (server did not start, notebook did not open, ...)."""


class NotebookError(AssertionError):
    """A cell raised (or the run stopped) during :func:`run_all_cells`; the message has the traceback."""


def chromium_missing_reason() -> str | None:
    """Why the UI tests cannot run here, or None when they can."""
    if not os.access(CHROMIUM, os.X_OK):
        return (
            f"UI tests need Debian's Chromium at {CHROMIUM} "
            "(scripts/setup-env installs it where apt-get is available)"
        )
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "UI tests need the playwright package (the dev extra: scripts/setup-env)"
    return None


@dataclass
class Lab:
    """A running JupyterLab server."""

    base_url: str  # "http://127.0.0.1:PORT/"
    token: str
    root_dir: Path  # the server's root: notebooks of a test go here
    log_path: Path  # the server's stdout and stderr
    proc: subprocess.Popen[bytes] = field(repr=False)

    def url(self, path: str = "lab", **query: str) -> str:
        """Absolute URL of ``path`` (relative to the server root URL), with the token."""
        qs = urllib.parse.urlencode({**query, "token": self.token})
        return f"{self.base_url}{path.lstrip('/')}?{qs}"

    def api(self, method: str, path: str, body: Any = None, timeout: float = 30.0) -> Any:
        """Call the server's REST API (``path`` like ``"api/sessions"``); returns the decoded JSON."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            self.base_url + path.lstrip("/"),
            data=data,
            method=method,
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw = resp.read()
        return json.loads(raw) if raw else None

    def log_tail(self, chars: int = 6000) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError as e:
            return f"(no server log: {e})"
        return text[-chars:]

    def shutdown_kernels(self) -> None:
        """Shut down every session and kernel, so the next test starts from a fresh kernel."""
        for session in self.api("GET", "api/sessions"):
            with contextlib.suppress(urllib.error.HTTPError):
                self.api("DELETE", f"api/sessions/{session['id']}", timeout=60)
        for kernel in self.api("GET", "api/kernels"):
            with contextlib.suppress(urllib.error.HTTPError):
                self.api("DELETE", f"api/kernels/{kernel['id']}", timeout=60)


# --- server -------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# Looked up here, not in the forked child, where loading a library could deadlock.
_PRCTL = getattr(ctypes.CDLL(None), "prctl", None) if sys.platform == "linux" else None


def _die_with_parent() -> None:
    # Linux: the server gets SIGTERM (and shuts its kernels down) if pytest itself is killed.
    if _PRCTL is not None:
        _PRCTL(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG


def _write_lab_settings(settings_dir: Path) -> None:
    for plugin, values in LAB_SETTINGS.items():
        f = settings_dir / f"{plugin}.jupyterlab-settings"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(values, indent=2))


def start_lab(base: Path) -> Lab:
    """Start JupyterLab from this venv with every Jupyter dir isolated under ``base``."""
    dirs = {
        name: base / name
        for name in ("root", "config", "data", "runtime", "settings", "workspaces", "ipython")
    }
    for d in dirs.values():
        d.mkdir(parents=True, exist_ok=True)
    _write_lab_settings(dirs["settings"])
    (dirs["config"] / "labconfig").mkdir()
    (dirs["config"] / "labconfig" / "page_config.json").write_text(json.dumps(LAB_PAGE_CONFIG))
    env = {k: v for k, v in os.environ.items() if k not in ("JUPYTER_PATH", "JUPYTER_CONFIG_PATH")}
    env.update(
        JUPYTER_CONFIG_DIR=str(dirs["config"]),
        # The user data dir comes first in the kernel spec search: isolate it so the venv's python3
        # spec (in sys.prefix/share/jupyter, still searched) is the one found.
        JUPYTER_DATA_DIR=str(dirs["data"]),
        JUPYTER_RUNTIME_DIR=str(dirs["runtime"]),
        JUPYTERLAB_SETTINGS_DIR=str(dirs["settings"]),
        JUPYTERLAB_WORKSPACES_DIR=str(dirs["workspaces"]),
        IPYTHONDIR=str(dirs["ipython"]),
        # Spark in the kernels must bind to loopback (the sandbox has no routable address).
        SPARK_LOCAL_IP="127.0.0.1",
        PYDEVD_DISABLE_FILE_VALIDATION="1",  # silences debugpy's frozen-modules warning in every kernel
    )
    token = secrets.token_hex(16)
    log_path = base / "jupyter-server.log"
    last_error = ""
    for _attempt in range(3):  # the free port can be taken between probing and binding
        port = _free_port()
        cmd = [
            # sys.executable is the venv's Python: the "python" in the python3 kernel spec resolves to
            # the server's interpreter, so kernels run the venv's Python too.
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={dirs['root']}",
            "--ServerApp.allow_root=True",  # CI and these machines run as root
            "--ServerApp.terminals_enabled=False",
            # The default (pypi) extension manager would query PyPI.
            "--LabApp.extension_manager=readonly",
            # Nothing fetched from the internet: no news feed, no update check.
            "--LabApp.news_url=None",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            # window.jupyterapp lets run_all_cells read error outputs from the notebook model.
            "--LabApp.expose_app_in_browser=True",
        ]
        log = log_path.open("ab")
        try:
            proc = subprocess.Popen(
                cmd,
                cwd=dirs["root"],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, killed as a whole at the end
                preexec_fn=_die_with_parent if _PRCTL is not None else None,
            )
        finally:
            log.close()
        lab = Lab(f"http://127.0.0.1:{port}/", token, dirs["root"], log_path, proc)
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                lab.api("GET", "api/status", timeout=2)
                return lab
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.2)  # polling a starting server: there is nothing to wait on
        if proc.poll() is None:
            stop_lab(lab)
            raise LabError(f"JupyterLab did not answer within {SERVER_START_TIMEOUT:.0f}s:\n{lab.log_tail()}")
        last_error = lab.log_tail()
    raise LabError(f"JupyterLab exited at start:\n{last_error}")


def _descendants(pid: int) -> list[int]:
    try:
        import psutil  # ipykernel depends on it
    except ImportError:
        return []
    try:
        return [p.pid for p in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []


def stop_lab(lab: Lab, timeout: float = 20.0) -> None:
    """Stop the server and everything it started: no orphan kernels, JVMs or servers."""
    proc = lab.proc
    # Kernels run in sessions of their own (jupyter_client starts them so), outside the server's
    # process group: remember them before the server goes.
    children = _descendants(proc.pid)
    if proc.poll() is None:
        with contextlib.suppress(Exception):
            lab.api("POST", "api/shutdown", timeout=5)  # clean: the server shuts its kernels down
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(5)
            break
    for pid in children:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)  # a kernel's own group: it and, say, its Spark JVM
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def running_lab(base: Path) -> Iterator[Lab]:
    lab = start_lab(base)
    try:
        yield lab
    finally:
        stop_lab(lab)


# --- browser ------------------------------------------------------------------------------------


def launch_browser(pw: Playwright) -> Browser:
    # launch() gives the browser a fresh, empty user-data-dir of its own and removes it on close.
    return pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)


# --- notebooks ----------------------------------------------------------------------------------

_copies = 0


def copy_notebook(lab: Lab, src: str | os.PathLike[str], name: str | None = None) -> str:
    """Copy a notebook (path relative to the repo, or absolute) into the lab root; returns its path
    relative to the root. Each call gets a folder of its own, so two tests never share a file (and
    so never share a session). The copy's kernelspec is set to the venv's ``python3``: the only
    kernel the harness has (a notebook exported from Fabric names ``synapse_pyspark``, which would
    stop at the kernel picker)."""
    global _copies
    src_path = Path(src) if Path(src).is_absolute() else REPO / src
    _copies += 1
    dest = lab.root_dir / f"nb{_copies:03d}" / (name or src_path.name)
    dest.parent.mkdir(parents=True)
    doc = json.loads(src_path.read_text(encoding="utf-8"))
    doc.setdefault("metadata", {})["kernelspec"] = dict(KERNELSPEC)
    dest.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    return dest.relative_to(lab.root_dir).as_posix()


def write_notebook(lab: Lab, name: str, cells: Sequence[str]) -> str:
    """Write a notebook of code cells (markdown cells when a source starts with ``"# %% md\\n"``)
    into the lab root; returns its path relative to the root."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    for source in cells:
        if source.startswith("# %% md\n"):
            nb.cells.append(nbformat.v4.new_markdown_cell(source.removeprefix("# %% md\n")))
        else:
            nb.cells.append(nbformat.v4.new_code_cell(source))
    tmp = lab.root_dir / ".incoming" / name
    tmp.parent.mkdir(exist_ok=True)
    nbformat.write(nb, tmp)
    try:
        return copy_notebook(lab, tmp, name)
    finally:
        tmp.unlink()


# JS run in the page. The single notebook of the page: open_notebook opens each one in a workspace
# of its own, so no other notebook is ever restored next to it.
_JS_OPEN_STATE = """() => {
  const dialog = document.querySelector('.jp-Dialog');
  if (dialog) return 'dialog: ' + dialog.innerText;
  const app = window.jupyterapp;
  if (!app) return false;  // the page's scripts are still loading (the timeout error says more)
  const panel = [...app.shell.widgets('main')].find(w => w.sessionContext && w.content && w.content.model);
  if (!panel || !panel.node.querySelector('.jp-Notebook .jp-Cell')) return false;
  // The toolbar's indicator also says "idle" while there is no kernel yet: ask the kernel connection.
  const kernel = panel.sessionContext.session?.kernel;
  if (!kernel || kernel.connectionStatus !== 'connected' || kernel.status !== 'idle') return false;
  return panel.node.querySelector('.jp-Notebook-ExecutionIndicator')?.dataset.status === 'idle' ? 'idle' : false;
}"""

_JS_PROMPTS = """() => {
  const panel = document.querySelector('.jp-NotebookPanel');
  return {
    status: panel?.querySelector('.jp-Notebook-ExecutionIndicator')?.dataset.status ?? 'no notebook',
    prompts: [...(panel?.querySelectorAll('.jp-CodeCell .jp-InputPrompt') ?? [])].map(p => p.textContent.trim()),
  };
}"""

# Done when no cell is queued or running ([*]), the kernel is idle and at least one cell ran in
# this run. Cells show [*] from the moment the command runs, so idle-and-no-[*] cannot be seen
# between the click and the start of the run (except before the click is handled: "ran" covers it).
_JS_RUN_DONE = """(before) => {
  const panel = document.querySelector('.jp-NotebookPanel');
  if (!panel) return false;
  const status = panel.querySelector('.jp-Notebook-ExecutionIndicator')?.dataset.status;
  const prompts = [...panel.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].map(p => p.textContent);
  if (prompts.length === 0) return status === 'idle';
  if (status !== 'idle' || prompts.some(p => p.includes('*'))) return false;
  const counts = prompts.map(p => Number((p.match(/\\[(\\d+)\\]/) || [0, 0])[1]));
  return counts.some(c => c > before);
}"""

_JS_ERRORS = """() => {
  const app = window.jupyterapp;
  if (!app) return null;
  for (const w of app.shell.widgets('main')) {
    const model = w.content && w.content.model;
    if (!model || !model.cells) continue;
    const errors = [];
    for (let i = 0; i < model.cells.length; i++) {
      const cell = model.cells.get(i);
      if (cell.type !== 'code') continue;
      for (let j = 0; j < cell.outputs.length; j++) {
        const out = cell.outputs.get(j).toJSON();
        if (out.output_type === 'error') {
          errors.push({cell: i, source: cell.sharedModel.getSource(), ename: out.ename,
                       evalue: out.evalue, traceback: (out.traceback || []).join('\\n')});
        }
      }
    }
    return errors;
  }
  return null;
}"""


def notebook(page: Page) -> Locator:
    """The notebook panel of the page (toolbar and cells)."""
    return page.locator(".jp-NotebookPanel").first


def open_notebook(
    page: Page, lab: Lab, path: str, timeout: float = 60_000, file_browser: bool = False
) -> Locator:
    """Open ``path`` (relative to ``lab.root_dir``) in a fresh workspace and wait until the notebook
    is shown and its kernel is connected and idle. The left sidebar (file browser) is collapsed
    unless ``file_browser``, so panels get the page's width. Returns the notebook panel."""
    # A workspace of its own: nothing an earlier test opened is restored next to this notebook.
    workspace = f"t{secrets.token_hex(4)}"
    page.goto(lab.url(f"lab/workspaces/{workspace}/tree/{urllib.parse.quote(path)}"))
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        state = page.wait_for_function(_JS_OPEN_STATE, timeout=timeout, polling=100).json_value()
    except PlaywrightTimeout as e:
        info = page.evaluate(_JS_PROMPTS)
        app = page.evaluate("() => Boolean(window.jupyterapp)")
        why = (
            ""
            if app
            else "; no window.jupyterapp: is the server started with --LabApp.expose_app_in_browser?"
        )
        raise LabError(
            f"{path}: notebook or kernel not ready after {timeout / 1000:.0f}s ({info}{why})"
        ) from e
    if state != "idle":
        raise LabError(f"{path}: {state}")
    if not file_browser:
        page.evaluate("() => window.jupyterapp.shell.collapseLeft()")
    return notebook(page)


def _max_count(page: Page) -> int:
    prompts = page.evaluate(_JS_PROMPTS)["prompts"]
    counts = [int(m.group(1)) for p in prompts if (m := re.search(r"\[(\d+)\]", p))]
    return max(counts, default=0)


def cell_outputs_text(page: Page) -> list[str]:
    """The visible text of each code cell's output area, in order (index 0 = first code cell)."""
    return notebook(page).locator(".jp-CodeCell .jp-Cell-outputArea").all_inner_texts()


def run_all_cells(page: Page, timeout: float = 120_000) -> None:
    """Run every cell with Lab's own Run > Run All Cells and wait until all of them have run and
    the kernel is idle. Raises :class:`NotebookError` with the traceback when a cell raised."""
    before = _max_count(page)
    notebook(page).locator(".jp-Notebook").click(position={"x": 5, "y": 5})  # the notebook has focus
    page.locator("#jp-menu-panel .lm-MenuBar-item", has_text=re.compile(r"^Run$")).click()
    # The Run menu's "Run All Cells" (runmenu:run-all runs notebook:run-all-cells on the current notebook).
    page.locator('.lm-Menu-item[data-command="runmenu:run-all"]').click()
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(_JS_RUN_DONE, arg=before, timeout=timeout, polling=100)
    except PlaywrightTimeout as e:
        info = page.evaluate(_JS_PROMPTS)
        raise NotebookError(
            f"cells still running after {timeout / 1000:.0f}s: kernel {info['status']}, "
            f"prompts {info['prompts']}\n{_outputs_summary(page)}"
        ) from e
    errors = page.evaluate(_JS_ERRORS)
    if errors is None:
        raise LabError("window.jupyterapp is missing: start the server with --LabApp.expose_app_in_browser")
    if errors:
        raise NotebookError(
            "\n\n".join(
                f"cell {e['cell']} raised {e['ename']}: {e['evalue']}\n--- source ---\n{e['source']}\n"
                f"--- traceback ---\n{ANSI.sub('', e['traceback'])}"
                for e in errors
            )
        )
    info = page.evaluate(_JS_PROMPTS)
    not_run = [i for i, p in enumerate(info["prompts"]) if not re.search(r"\[(\d+)\]", p)]
    counts = [int(m.group(1)) if (m := re.search(r"\[(\d+)\]", p)) else 0 for p in info["prompts"]]
    stale = [i for i, c in enumerate(counts) if c <= before]
    if not_run or stale:
        raise NotebookError(
            f"run stopped without an error output (kernel died?): code cells {sorted(set(not_run + stale))} "
            f"did not run; prompts {info['prompts']}\n{_outputs_summary(page)}"
        )


def _outputs_summary(page: Page, chars: int = 4000) -> str:
    texts = [f"[cell {i}] {t.strip()}" for i, t in enumerate(cell_outputs_text(page)) if t.strip()]
    return "\n".join(texts)[-chars:]


# --- widgets ------------------------------------------------------------------------------------


def widget(scope: Page | Locator, dom_class: str) -> Locator:
    """The widget(s) rendered in cell outputs that carry ``dom_class`` (a ``_dom_classes`` entry,
    e.g. ``"openmirror-monitor"``). Scope further locators to it."""
    return scope.locator(f".jp-OutputArea-output .{dom_class}")


def widgets_by_text(scope: Page | Locator, text: str | re.Pattern[str]) -> Locator:
    """Widget views (ipywidgets 8 gives each the ``jupyter-widgets`` class) showing ``text``; the
    innermost matches come last."""
    return scope.locator(".jupyter-widgets", has_text=text)


def widget_button(scope: Page | Locator, label: str | re.Pattern[str]) -> Locator:
    """An ipywidgets Button by its description."""
    return scope.locator(".widget-button", has_text=label)


def toasts(page: Page) -> Locator:
    """Lab's notification toasts (e.g. the news prompt, which the harness turns off)."""
    return page.locator(".Toastify__toast")


def screenshot(page: Page, name: str, target: Locator | None = None) -> Path:
    """Save a PNG to ``tests/ui/artifacts/<name>.png`` (the page, or just ``target``) for humans to
    look at; returns its path."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', name)}.png"
    if target is not None:
        target.screenshot(path=path, animations="disabled")
    else:
        page.screenshot(path=path, animations="disabled")
    return path
