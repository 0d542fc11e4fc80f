"""What every panel does on ``close()``: close each widget inside it, since each holds a comm of
its own that would otherwise outlive the panel in the kernel and in the front end."""

from __future__ import annotations

from typing import Any


def close_children(box: Any) -> None:
    """Close every widget below ``box`` (children, their children, ...), not ``box`` itself."""
    stack = list(getattr(box, "children", ()))
    while stack:
        child = stack.pop()
        stack.extend(getattr(child, "children", ()))
        child.close()
