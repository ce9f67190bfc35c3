"""Where Ray's breakpoint hook leaves a worker on Python 3.12+, and how to reach the user's line.

``breakpoint()`` in a Ray worker runs Ray's hook (``ray/util/rpdb.py set_trace`` ->
``ray/util/debugpy.py set_trace``), which asks pydevd to stop in the caller of its own frame.
Before 3.12 (``sys.settrace``) that is the user's ``breakpoint()`` line. From 3.12 on, debugpy
traces with ``sys.monitoring`` and ends that step as a *step return* into the next frame out,
which is still Ray's ``rpdb.py``: every pause would show Ray's file. One ``next`` (a step over
that frame's ``return``) reaches the user's frame, at the ``breakpoint()`` line, as on 3.10 and
3.11 (verified with debugpy 1.8.22 on 3.12.1 and 3.13.0). Not ``stepOut``: after one, debugpy
reports the worker terminated once its task returns, though Ray keeps the process.

A post-mortem pause (``RAY_DEBUG_POST_MORTEM=1``) is worse there: Ray calls pydevd's
unhandled-exception stop from ordinary code, with monitoring on, so the first Python call inside
pydevd's own wait (a ``contextlib`` helper) is suspended as a second, nested stop: no exception,
no traceback, the stack of pydevd's caller. :func:`rearm_post_mortem` runs in the worker at that
nested stop: once it is continued, the real stop (the raising frame, the exception) stays
suspended and is announced, as on 3.10 and 3.11.

Once such a worker has stopped, the bridge also runs :func:`raydap.live.ray_hook.drop_pydevd_tags`
in it (:data:`DROP_TAGS_STATEMENT`): an exception raised there later would otherwise reach the
task's caller as ``UnserializableException``, since pydevd tags it with an object of its own.

This module is pure: the upstream asks :func:`settle_action` what to do with a stop's top
frames and sends the requests itself.
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from raydap.live import ray_hook as worker_side

#: How many steps out of Ray's hook are tried before a stop is shown where it is.
MAX_SETTLE_STEPS = 3


class Settle(enum.Enum):
    """What to do with a fresh stop before anyone sees it."""

    SHOW = "show"  # it stands where the user expects
    STEP = "step"  # inside Ray's breakpoint hook: step over its return, into the user's frame
    REARM = "rearm"  # pydevd's nested post-mortem stop: re-arm the real one, then continue


def _path(frame: dict[str, Any]) -> str:
    source = frame.get("source")
    path = source.get("path") if isinstance(source, dict) else None
    return str(path or "").replace("\\", "/")


def is_hook_frame(frame: dict[str, Any]) -> bool:
    return _path(frame).endswith(worker_side.HOOK_FILES)


def may_stop_in_hook(body: dict[str, Any]) -> bool:
    """A stop that Ray's hook may have made: ``breakpoint()`` or a post-mortem stop, never a
    breakpoint set by a client (debugpy names the breakpoints it hit), a step or a pause."""
    return body.get("reason") in ("breakpoint", "exception") and not body.get("hitBreakpointIds")


def settle_action(frames: Sequence[dict[str, Any]]) -> Settle:
    """What a stop whose stack starts with ``frames`` (innermost first) needs."""
    if not frames:
        return Settle.SHOW
    if (
        len(frames) > 1
        and _path(frames[0]).endswith("/contextlib.py")
        and frames[1].get("name") == "_debugpy_excepthook"
        and is_hook_frame(frames[1])
    ):
        return Settle.REARM
    return Settle.STEP if is_hook_frame(frames[0]) else Settle.SHOW


def rearm_post_mortem() -> None:  # pragma: no cover (runs inside a worker, sent as source)
    """Inside the worker, at pydevd's nested stop: make the outer unhandled-exception stop
    suspend and announce itself once the nested one is continued.

    The outer stop reaches ``notify_thread_suspended`` next; this thread's tracing is off
    until it ends, so pydevd's own helpers are not stopped in again.
    """
    import contextlib
    import threading

    import pydevd  # type: ignore[import-not-found]
    from _pydevd_bundle.pydevd_comm_constants import (  # type: ignore[import-not-found]
        CMD_ADD_EXCEPTION_BREAK,
    )
    from _pydevd_sys_monitoring import (  # type: ignore[import-not-found]
        pydevd_sys_monitoring as monitoring,
    )

    debugger = pydevd.get_global_debugger()
    target = threading.current_thread()
    notifier = debugger._threads_suspended_single_notification
    traced = monitoring.suspend_current_thread_tracing()

    class Rearmed:
        def __getattr__(self, name: str) -> Any:
            return getattr(notifier, name)

        @contextlib.contextmanager
        def notify_thread_suspended(self, thread_id: Any, thread: Any, reason: Any) -> Any:
            if thread is target:
                debugger._threads_suspended_single_notification = notifier
                debugger.set_suspend(thread, CMD_ADD_EXCEPTION_BREAK)
            try:
                with notifier.notify_thread_suspended(thread_id, thread, reason):
                    yield
            finally:
                if thread is target and traced:
                    monitoring.resume_current_thread_tracing()

    debugger._threads_suspended_single_notification = Rearmed()


def _shipped(*functions: Callable[..., object]) -> str:
    """An expression that defines ``functions`` in a fresh namespace of the worker and calls
    the last one: the worker needs no raydap installed."""
    source = "import copyreg, sys\nfrom typing import Any\n"
    source += "".join(inspect.getsource(function) for function in functions)
    return f"exec({source + functions[-1].__name__ + '()'!r}, {{}})"


#: What the upstream evaluates in the nested stop's frame.
REARM_STATEMENT = _shipped(rearm_post_mortem)
#: What the upstream evaluates once in a 3.12+ worker that runs no ``raydap.live`` hook.
DROP_TAGS_STATEMENT = _shipped(worker_side._as_none, worker_side.drop_pydevd_tags)
