"""The signal handlers raydap installs in a worker, from outside, on the worker's node.

Each is written to a file as the text of a module that installs it for ``SIGUSR2``
(:func:`installing`), and that file is run inside the worker (gdb, or ``sys.remote_exec``;
:mod:`.on_node`); the signal then runs it in the worker's main thread. They are real
functions here so that ruff and mypy read them, and shipped by source, since the worker need
not have raydap installed: they use only the standard library, Ray and debugpy. They run from
a real file because debugpy does not trace code compiled from a string.
"""

from __future__ import annotations

import inspect
import signal
from collections.abc import Callable
from types import FrameType
from typing import Any

#: The worker's own handler of the signal, put back first; the installed file sets it.
_previous: Any = signal.SIG_DFL


def raydap_pause(signum: int, frame: FrameType | None) -> None:
    """Pause this worker where it is (raydap pause).

    The signal wakes the main thread even where it is blocked (a lock, a wait: CPython runs
    handlers when such a wait is interrupted), and this pauses it right there: it opens Ray's
    own debugpy listener (so the State API publishes the port), counts as paused while no
    client is there (so the bridge finds it) and stops. The frames below are where it was."""
    import signal
    import sys

    signal.signal(signal.SIGUSR2, signal.SIG_DFL if _previous is None else _previous)
    import ray
    import ray.util.debugpy as ray_debugpy

    debugpy = ray_debugpy._try_import_debugpy()  # type: ignore[no-untyped-call]
    if debugpy is None:
        return
    ray_debugpy._ensure_debugger_port_open_thread_safe()  # type: ignore[no-untyped-call]
    ray_debugpy._override_breakpoint_hooks()  # type: ignore[no-untyped-call]
    with ray._private.worker.global_worker.worker_paused_by_debugger():
        debugpy.wait_for_client()
    import pydevd  # type: ignore[import-not-found]

    here = sys._getframe()  # stop on the next line of this very frame
    pydevd.settrace(suspend=True, trace_only_current_thread=True, stop_at_frame=here)
    return  # paused by raydap pause: the frames below are where this worker was


def raydap_rescue(signum: int, frame: FrameType | None) -> None:
    """Make this paused worker, whose debugpy adapter exited, reachable again.

    Its port refuses, and its main thread waits in ``debugpy.wait_for_client()`` for a client
    that can never come. In that main thread, inside the wait, this:

    - opens a new debugpy listener. ``debugpy.listen()`` refuses a second call
      (``listen.called``), and the pydevd that the first one set up patches process creation,
      so the new adapter would start as a debugged child of the dead one: the flag is reset
      and ``_posixsubprocess.fork_exec``/``subprocess._fork_exec`` are their originals
      meanwhile;
    - tells Ray the new port (the State API lists it), so the bridge finds and holds the worker
      again;
    - waits there for that client, then ends the first wait (its own event, bound before the
      second call replaces it), so Ray's ``set_trace`` goes on and stops at the same
      ``breakpoint()``, with the same values."""
    import signal

    signal.signal(signal.SIGUSR2, signal.SIG_DFL if _previous is None else _previous)
    import _posixsubprocess
    import subprocess

    import debugpy
    import ray
    from debugpy.server import api

    worker = ray._private.worker.global_worker
    first_wait = api.wait_for_client.cancel  # the stuck call's own event
    patched = [(_posixsubprocess, "fork_exec"), (subprocess, "_fork_exec")]
    saved = [getattr(module, name, None) for module, name in patched]
    for module, name in patched:
        original = getattr(module, "original_" + name, None)
        if original is not None:
            setattr(module, name, original)
    try:
        api.listen.called = False
        _, port = debugpy.listen((worker.node_ip_address, 0))
    finally:
        for (module, name), function in zip(patched, saved, strict=True):
            if function is not None:
                setattr(module, name, function)
    worker.set_debugger_port(port)  # type: ignore[no-untyped-call]
    debugpy.wait_for_client()
    first_wait()


def installing(handler: Callable[[int, FrameType | None], None]) -> str:
    """The text of a module that installs ``handler`` for ``SIGUSR2`` in the process that runs
    it, keeping that process's own handler to put back."""
    summary = (handler.__doc__ or "").strip().splitlines()[0]
    return (
        f'"""Installed by raydap: {summary}"""\n'
        "from __future__ import annotations\n\n"
        "import signal\n\n"
        "_previous = signal.getsignal(signal.SIGUSR2)\n\n\n"
        f"{inspect.getsource(handler)}\n\n"
        f"signal.signal(signal.SIGUSR2, {handler.__name__})\n"
    )
