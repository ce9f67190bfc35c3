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

log = logging.getLogger(__name__)

#: GCS internal KV namespace and key prefix of the marks live workers leave for the bridge:
#: ``live:<worker id hex>`` -> ``{"pid": ..., "cwd": ...}``. The mark tells the bridge that a
#: worker's open debugger port means "hold me while I run" (any worker that once hit a
#: ``breakpoint()`` has an open port too), and where its code is, for path mapping.
NAMESPACE = "raydap"
MARK_PREFIX = "live:"

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
        mark = json.dumps({"pid": os.getpid(), "cwd": os.getcwd()})
        # The mark first: once the port is visible, the bridge finds the mark beside it.
        internal_kv._internal_kv_put(mark_key(worker_id), mark, overwrite=True,
                                     namespace=NAMESPACE)  # fmt: skip
        ray_debugpy._ensure_debugger_port_open_thread_safe()  # type: ignore[no-untyped-call]
    except Exception as exc:  # a worker must start even if Ray's internals moved
        _warn_once(f"raydap.live: this worker cannot be debugged live: {exc!r}")


def _warn_once(message: str) -> None:
    global _warned
    if not _warned:
        _warned = True
        log.warning(message)
