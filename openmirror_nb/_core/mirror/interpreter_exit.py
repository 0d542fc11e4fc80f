"""Whether the interpreter is exiting, which the mirror's background thread must tell apart from
a failure.

A mirror started in the background (``LocalMirror.start``, the monitoring pane's toggle) runs on
a daemon thread, and that thread goes on while the interpreter exits (a kernel restart, the end
of a script). Python first shuts down ``concurrent.futures``' thread pools, and pyarrow converts
a pandas frame with one, so a pass caught at that moment fails with "cannot schedule new futures
after interpreter shutdown". That is not the table's fault: the pass is dropped unrecorded and
unprinted, as a daemon thread is cut short a moment later anyway; the next pass (in the next
process) does its work.
"""

from __future__ import annotations

import concurrent.futures.thread  # noqa: F401  (imported first: its exit hook is registered before ours)
import threading

_EXITING = threading.Event()


def exiting() -> bool:
    """True once the interpreter has begun to exit."""
    return _EXITING.is_set() or not threading.main_thread().is_alive()


# threading's exit hooks run when the interpreter starts to exit, before it joins its threads and
# before ``atexit``'s: in reverse order of registration, so this one runs before the hook that
# stops the thread pools (concurrent.futures registers it on import, above). ``_register_atexit``
# is the private hook concurrent.futures itself uses; without it, the main thread's end still says
# so, a moment later.
_register = getattr(threading, "_register_atexit", None)
if _register is not None:
    _register(_EXITING.set)
