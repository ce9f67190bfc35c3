"""The worker side of live debugging: a Ray ``worker_process_setup_hook``.

    ray.init(runtime_env={"worker_process_setup_hook": "raydap.live.setup"})

Each worker of such a job opens its debugpy listener as it starts, through Ray's own function,
so the dashboard reports its ``debugger_port`` while it runs and a raydap bridge can hold it
without pausing it: breakpoints set in an editor and Pause then work on code with no
``breakpoint()``. A later ``breakpoint()`` reuses the same listener.

This module runs inside every worker: it imports nothing of the bridge, and it never blocks or
breaks a worker's start. Without a usable debugpy it logs once and does nothing.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any

log = logging.getLogger(__name__)

#: GCS internal KV namespace and key prefix of the marks live workers leave for the bridge:
#: ``live:<worker id hex>`` -> ``{"pid", "cwd", "python": [major, minor], "stops_in_ray_hook",
#: "env", "job"}`` (``env``: the variables that name its rank, ``RANK``, ``WORLD_SIZE``,
#: ``LOCAL_RANK``; ``job``: its Ray job, whose kept breakpoints it is given when held).
#: The mark tells the bridge that a worker's open debugger port means "hold me while I run"
#: (any worker that once hit a ``breakpoint()`` has an open port too), where its code is, for
#: path mapping, and whether its ``breakpoint()`` stops need moving to the user's line.
NAMESPACE = "raydap"
MARK_PREFIX = "live:"

#: What names a worker's rank in its environment (torchrun's convention), put in its mark.
IDENTITY_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK")

_warned = False


def mark_key(worker_id: str) -> str:
    return MARK_PREFIX + worker_id


def setup() -> None:
    """Make this worker live. Any failure is logged once per process, never raised."""
    try:
        import debugpy  # noqa: F401  (Ray's own check logs an error per call; ours, once)
    except ImportError:
        _warn_once(
            "raydap.live: debugpy is not importable in this worker, so it cannot be debugged "
            "live; add it to the job (runtime_env={'pip': ['raydap']})"
        )
        return
    try:
        import ray
        from ray.experimental import internal_kv
        from ray.util import debugpy as ray_debugpy

        if ray._private.worker.global_worker.mode != ray.WORKER_MODE:
            # Not a worker (a driver, a test): asking Ray anything here could start a cluster.
            _warn_once("raydap.live.setup runs in Ray workers only (as worker_process_setup_hook)")
            return
        # debugpy's warning that frozen stdlib modules may miss breakpoints, once per worker,
        # is noise here: breakpoints are set in the job's own code.
        os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
        worker_id = ray.get_runtime_context().get_worker_id()
        stops_in_ray_hook = not _stops_at_user_line()
        mark = json.dumps({
            "pid": os.getpid(), "cwd": os.getcwd(), "python": list(sys.version_info[:2]),
            "stops_in_ray_hook": stops_in_ray_hook,
            "env": {name: os.environ[name] for name in IDENTITY_VARIABLES if name in os.environ},
            "unsupported": _unsupported(), "answers": _answer_requests(),
            "job": _job_of(ray),
        })  # fmt: skip
        _children_configure()
        _arm_recorder()
        # The mark first: once the port is visible, the bridge finds the mark beside it.
        internal_kv._internal_kv_put(mark_key(worker_id), mark, overwrite=True,
                                     namespace=NAMESPACE)  # fmt: skip
        ray_debugpy._ensure_debugger_port_open_thread_safe()  # type: ignore[no-untyped-call]
        keep_rays_breakpoint()
    except Exception as exc:  # a worker must start even if Ray's internals moved
        _warn_once(f"raydap.live: this worker cannot be debugged live: {exc!r}")
        return
    try:
        from raydap.live import ray_hook

        if not ray_hook.drop_pydevd_tags():
            log.info("raydap.live: this debugpy's exception tags are left as they are")
    except Exception as exc:
        log.info("raydap.live: pydevd's exception tags left as they are (%r)", exc)
    try:
        from raydap.live import collectives

        collectives.watch_groups(collectives.serve())
    except Exception as exc:  # debugpy's internals moved: ranks as the environment says
        log.info("raydap.live: this worker's process groups are not reported (%r)", exc)
    try:
        from raydap.live import captures

        if not captures.skip_compiling_conditions():
            log.info("raydap.live: capture points' conditions are compiled at every hit")
    except Exception as exc:  # debugpy's internals moved: correct, only slower
        log.info("raydap.live: capture points' conditions are compiled at every hit (%r)", exc)
    try:
        trace_on_demand()
    except Exception as exc:  # debugpy's internals moved: correct, only slower
        log.info("raydap.live: tracing from the start (%r)", exc)


def _job_of(ray: Any) -> str | None:
    """The Ray job this worker was started for (None where Ray has not said: all ``f``)."""
    job = str(ray.get_runtime_context().get_job_id())
    return job if job.strip("f") else None


def _answer_requests() -> list[str]:
    """Teach pydevd raydap's own read requests; those it answers, for the mark (the bridge
    sends no request a worker would never answer: its connection would wait for ever)."""
    try:
        from raydap.live import stacks, to_bridge
        from raydap.protocol.extension import STACKS

        to_bridge.answer_requests(STACKS, stacks.answer)
    except Exception as exc:  # debugpy's internals moved: its stacks are read with py-spy
        log.info("raydap.live: this worker's stacks are read from outside (%r)", exc)
        return []
    return [STACKS]


def _unsupported() -> list[str]:
    """The private debugpy and Ray hooks raydap uses that this worker lacks (:mod:`.compat`),
    for its mark, where the bridge shows them on the worker's record; logged as a warning."""
    from raydap.live import compat

    try:
        missing = compat.unsupported("worker", ("debugpy", "ray", "python"))
    except Exception as exc:  # the check itself must never stop a worker
        missing = [f"raydap.live.compat: the check failed: {exc!r}"]
    if missing:
        log.warning("raydap.live: this worker's debugpy or Ray lacks what raydap uses, so some "
                    "debugging works less here: %s", "; ".join(missing))  # fmt: skip
    return missing[:64]


def keep_rays_breakpoint() -> None:
    """Make the worker's ``breakpoint()`` Ray's again once its debugpy listens. Opening the
    listener imports pydevd, which makes ``breakpoint()`` debugpy's own: that one carries on
    when no debugger is attached, so a ``breakpoint()`` before the bridge held the worker (or
    while no bridge ran) was skipped. Ray's waits for a debugger, as in any worker."""
    from ray.util import rpdb

    sys.breakpointhook = rpdb.set_trace


def _children_configure() -> None:
    """Whether and how the worker's children are debugged (:mod:`raydap.live.children`)."""
    from raydap.live import children

    try:
        children.configure()
    except Exception as exc:  # Ray's or debugpy's internals moved: children as debugpy has them
        log.info("raydap.live: child processes left to debugpy's defaults (%r)", exc)


def _arm_recorder() -> None:
    """torch's Flight Recorder, on before the job makes its groups (:mod:`.collectives`)."""
    from raydap.live import collectives

    collectives.arm_recorder(os.environ)


def _stops_at_user_line() -> bool:
    """Whether this worker's ``breakpoint()`` and post-mortem stops stand where the user
    expects (:mod:`raydap.live.ray_hook`); if not, the bridge moves them."""
    from raydap.live import ray_hook

    try:
        return ray_hook.install()
    except Exception as exc:  # Ray's internals moved: the bridge still moves the stops
        log.info("raydap.live: Ray's breakpoint hook left as it is (%r)", exc)
        return False


def trace_on_demand() -> None:
    """Run untraced until a debugger needs tracing.

    From ``debugpy.listen()`` on, debugpy traces every call of every thread: before Python 3.12
    (``sys.settrace``) that makes a CPU-bound Python loop 2 to 5 times slower, breakpoint or
    not. A live worker needs none of it until the first breakpoint or pause reaches it, so
    this takes the trace off its main thread and threads started later, and has debugpy put
    it back, on every thread, when a breakpoint is added (a line, a function, a raised
    exception) or a thread is to be suspended. From
    then on the worker runs at debugpy's usual speed. On 3.12+ debugpy uses
    ``sys.monitoring``, which costs little while no breakpoint is set: nothing is changed.
    """
    import threading

    import pydevd  # type: ignore[import-not-found]
    from _pydevd_bundle.pydevd_constants import (  # type: ignore[import-not-found]
        PYDEVD_USE_SYS_MONITORING,
    )

    debugger = pydevd.get_global_debugger()
    if PYDEVD_USE_SYS_MONITORING or debugger is None or debugger.frame_eval_func is not None:
        return
    breakpoints_changed, set_suspend = debugger.on_breakpoints_changed, debugger.set_suspend
    armed = threading.Lock()

    def arm() -> None:
        if armed.acquire(blocking=False):  # once: tracing then stays on
            threading.settrace(debugger.trace_dispatch)
            debugger.enable_tracing(debugger.trace_dispatch, apply_to_all_threads=True)

    def needs_tracing() -> bool:
        """Breakpoints that only tracing finds (an uncaught exception, which the bridge
        always asks for, is caught by an excepthook instead)."""
        wanted = (
            debugger.breakpoints,
            debugger.function_breakpoint_name_to_breakpoint,
            debugger.break_on_caught_exceptions,
            debugger.break_on_user_uncaught_exceptions,
        )
        return any(wanted)

    def on_breakpoints_changed(removed: bool = False) -> object:
        if not removed and needs_tracing():
            arm()
        return breakpoints_changed(removed=removed)

    def on_suspend(*args: object, **kwargs: object) -> object:
        arm()
        return set_suspend(*args, **kwargs)

    debugger.on_breakpoints_changed = on_breakpoints_changed
    debugger.set_suspend = on_suspend
    debugger.disable_tracing()
    threading.settrace(None)


def _warn_once(message: str) -> None:
    global _warned
    if not _warned:
        _warned = True
        log.warning(message)
