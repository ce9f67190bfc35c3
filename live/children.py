"""Child processes of a live worker, inside the worker: debugged by default, or not at all.

debugpy, listening in a worker, injects itself into the processes the worker starts
(``multiprocessing`` spawn and fork, ``subprocess``, ``os.fork``): each child connects back to
the worker's debugpy adapter and waits there until a client attaches, which the raydap bridge
does for every worker it holds. ``RAYDAP_CHILDREN=0`` in a job's ``env_vars`` turns that off:
children then run as if no debugger were there.

What a child cannot inherit is Ray's ``breakpoint()``: Ray's hook talks to the worker's Ray
core, which a child has not (a spawned child has none; a forked one has a copy that must not
be used). So the worker keeps Ray's hook for itself, and gives its children :func:`breakpoint`,
which stops through the child's own debugpy.
"""

from __future__ import annotations

import builtins
import logging
import os
import sys
from types import FrameType
from typing import Any

log = logging.getLogger(__name__)

#: ``0`` in a job's ``env_vars``: the children of its workers are not debugged.
VARIABLE = "RAYDAP_CHILDREN"

_BUILTIN_BREAKPOINT = builtins.breakpoint


def enabled() -> bool:
    return os.environ.get(VARIABLE, "1").strip() != "0"


def configure() -> None:
    """Call before the worker's debugpy listens. With children off, debugpy leaves them
    alone. Either way they get a ``breakpoint()`` that works where they run (or says why it
    cannot, rather than failing in Ray's hook)."""
    if not enabled():
        import debugpy

        debugpy.configure(subProcess=False)
    # (The worker's own breakpoint() is made Ray's again once its debugpy listens: setup.)
    # A spawned child starts afresh: Python's default hook reads this variable.
    os.environ["PYTHONBREAKPOINT"] = f"{__name__}.breakpoint"
    # A forked child inherits the worker's hooks (Ray's, which replaces builtins.breakpoint
    # after its first stop).
    os.register_at_fork(after_in_child=_in_forked_child)


def _in_forked_child() -> None:
    builtins.breakpoint = _BUILTIN_BREAKPOINT
    sys.breakpointhook = breakpoint


def breakpoint(*args: object, **kwargs: object) -> None:
    """``breakpoint()`` in a child of a live worker: a stop in the calling line, held by the
    bridge like any worker's. Without a debugger attached, it says so and carries on (a child
    must never wait for a debugger that is not coming)."""
    try:
        import debugpy
        import pydevd  # type: ignore[import-not-found]
    except ImportError:
        pydevd = None
    debugger = pydevd.get_global_debugger() if pydevd is not None else None
    if debugger is None or not debugpy.is_client_connected():
        log.warning(
            "raydap: breakpoint() in process %d, a child of a Ray worker, is skipped: no "
            "debugger holds it (is the raydap bridge running? RAYDAP_CHILDREN=0?)",
            os.getpid(),
        )
        return
    _suspend_in(debugger, sys._getframe(1))


def _suspend_in(debugger: Any, caller: FrameType) -> None:
    """Suspend this thread now, shown in ``caller`` on its ``breakpoint()`` line. (Ray's way,
    a step out of its hook started with ``pydevd.settrace``, ends on the line after it in a
    child.) As Ray's post-mortem stop does, this thread's tracing is held off meanwhile, so
    pydevd's own helpers are not stopped in; the caller and its parents are traced for
    stepping on from the stop."""
    import threading

    from _pydevd_bundle.pydevd_comm_constants import (  # type: ignore[import-not-found]
        CMD_SET_BREAK,
    )

    from raydap.live.ray_hook import untraced

    thread = threading.current_thread()
    debugger.set_trace_for_frame_and_parents(thread.ident, caller)
    info = debugger.set_additional_thread_info(thread)

    def suspend() -> None:
        debugger.set_suspend(thread, CMD_SET_BREAK)
        debugger.do_wait_suspend(thread, caller, "line", None)

    info.is_tracing += 1
    try:
        untraced(suspend)()
    finally:
        info.is_tracing -= 1
