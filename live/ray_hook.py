"""Ray's breakpoint hook, made to stop at the user's line on Python 3.12+, inside the worker.

From 3.12 on debugpy traces with ``sys.monitoring``, and two stops Ray makes land in the wrong
place (``raydap.adapter.upstream.ray_hook`` explains both; the bridge moves them for workers
without this hook, at the cost of a few requests): a ``breakpoint()`` ends as a step return
into Ray's own ``rpdb.py``, and a post-mortem stop is nested by pydevd inside itself. Here,
where raydap runs in the worker, the cause is fixed instead: the step starts from Ray's
outermost hook frame, so returning from it lands on the user's ``breakpoint()`` line, and
pydevd's unhandled-exception stop runs with this thread's monitoring off, so it suspends where
the exception was raised.

One more 3.12+ trap is here too: while debugpy watches a thread, every exception raised there
carries pydevd's tag (``exc.__dict__["__pydevd_tag__"]``, a class of pydevd's Cython module).
Ray pickles a task's exception for its caller, which cannot import pydevd: ``ray.get`` would
raise ``UnserializableException`` instead of the task's error. :func:`drop_pydevd_tags` makes
the tag pickle as None.
"""

from __future__ import annotations

import copyreg
import sys
from collections.abc import Callable
from types import FrameType

#: Ray's files that run between a user's ``breakpoint()`` (or a failing task) and pydevd.
HOOK_FILES = ("ray/util/rpdb.py", "ray/util/debugpy.py")


def _is_hook(frame: FrameType) -> bool:
    return frame.f_code.co_filename.replace("\\", "/").endswith(HOOK_FILES)


def install() -> bool:
    """Patch Ray's hook where this Python needs it. True when the worker's stops now stand
    where the user expects (already so before 3.12); False when Ray's hook is not what this
    was written for (the bridge then moves such stops itself)."""
    if sys.version_info < (3, 12):
        return True
    from ray.util import debugpy as ray_debugpy

    breakpoint_hook = getattr(ray_debugpy, "_debugpy_breakpoint", None)
    excepthook = getattr(ray_debugpy, "_debugpy_excepthook", None)
    if not callable(breakpoint_hook) or not callable(excepthook):
        return False
    ray_debugpy._debugpy_breakpoint = _breakpoint_at_user_line
    ray_debugpy._debugpy_excepthook = untraced(excepthook)
    return True


def _breakpoint_at_user_line() -> None:
    """Ray's ``_debugpy_breakpoint``, stepping from its outermost frame rather than its
    innermost: the step's return then stops in the frame that called ``breakpoint()``."""
    import pydevd  # type: ignore[import-not-found]

    frame = sys._getframe(1)  # Ray's set_trace, which is where Ray starts the step
    while frame.f_back is not None and _is_hook(frame.f_back):
        frame = frame.f_back
    pydevd.settrace(stop_at_frame=frame)


def untraced(stop: Callable[[], None]) -> Callable[[], None]:
    """A stop made with this thread's monitoring off (3.12+): pydevd's own helpers, called on
    the way to the stop, are not stopped in. (pydevd is importable here: the worker's debugpy
    listens by now.) Before 3.12, ``stop`` itself."""
    if sys.version_info < (3, 12):
        return stop

    def quietly() -> None:
        from _pydevd_sys_monitoring import (  # type: ignore[import-not-found]
            pydevd_sys_monitoring as monitoring,
        )

        traced = monitoring.suspend_current_thread_tracing()
        try:
            stop()
        finally:
            if traced:
                monitoring.resume_current_thread_tracing()

    return quietly


def drop_pydevd_tags() -> bool:
    """Pickle pydevd's exception tag as None (call once debugpy listens). False where this
    debugpy has no such tag."""
    if sys.version_info < (3, 12):
        return True
    try:
        from _pydevd_sys_monitoring import (
            pydevd_sys_monitoring as monitoring,
        )
    except ImportError:
        return False
    tag = getattr(monitoring, "UnhandledExceptionTag", None)
    if not isinstance(tag, type):
        return False
    copyreg.pickle(tag, _as_none)
    return True


def _as_none(tag: object) -> tuple[type[None], tuple[()]]:
    return type(None), ()
