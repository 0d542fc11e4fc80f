"""The IPython extension: ``%load_ext openmirror_nb`` registers the ``%openmirror`` line and cell
magic. Its state (the current database, the mirrors it started) lives on the magics object
registered with each shell, never in a module global.
"""

from __future__ import annotations

from typing import Any

from IPython.core.magic import Magics, line_cell_magic, magics_class

from openmirror_nb._core.magics.commands import MagicState, run

__all__ = ["OpenMirrorMagics", "load_ipython_extension", "unload_ipython_extension"]


@magics_class
class OpenMirrorMagics(Magics):
    """``%openmirror VERB ...`` and ``%%openmirror push ...``; ``%openmirror -h`` lists the verbs."""

    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self.state = MagicState(shell)

    @line_cell_magic
    def openmirror(self, line: str, cell: str | None = None) -> object:
        """Mirror DataFrames into an open-mirrored database; ``%openmirror -h`` lists the verbs.

        ``%openmirror connect [TARGET]``, ``push DF --table T [--keys K,...]``, ``status [T]``,
        ``monitor``, ``onboard``, ``describe T``, ``drop T``, ``schema T DF [--confirm T]``,
        ``tables``, ``mirror [--once | --start | --stop]``; ``%%openmirror push --table T`` pushes
        the cell's Spark SQL result.
        """
        return run(self.state, line, cell)


def _registered(shell: Any) -> OpenMirrorMagics | None:
    found = shell.magics_manager.registry.get(OpenMirrorMagics.__name__)
    return found if isinstance(found, OpenMirrorMagics) else None


def load_ipython_extension(shell: Any) -> None:
    """Register ``%openmirror`` with ``shell``; loading it again keeps the current state."""
    if _registered(shell) is None:
        shell.register_magics(OpenMirrorMagics(shell))


def unload_ipython_extension(shell: Any) -> None:
    """Stop the local mirrors the magic started and unregister ``%openmirror``."""
    magics = _registered(shell)
    if magics is None:
        return
    magics.state.stop_mirrors()
    manager = shell.magics_manager
    for kind in ("line", "cell"):
        if getattr(manager.magics[kind].get("openmirror"), "__self__", None) is magics:
            del manager.magics[kind]["openmirror"]
    del manager.registry[OpenMirrorMagics.__name__]
