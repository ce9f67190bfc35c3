"""Collective timeouts held off while a person debugs the job (docs/hangs.md says when).

A rank stopped at a breakpoint leaves its peers waiting in their next collective, and the
group's timeout then ends them: NCCL's watchdog aborts the process, gloo raises in it. A
collective takes the timeout its backend has when it is *issued*, so raising it later does
not save one already waiting (measured on NCCL and gloo: issue "nccl"'s ``pg_timeout.py``).
So the bridge raises every group's timeout in every rank of a job it debugs, before a rank
stops, and gives each backend its own back once nobody debugs the job.

This runs on pydevd's reader thread while the main thread may be inside a collective: the
backend's timeout is one value the next collective copies (torch's own ``dist.breakpoint``
sets it the same way, from the main thread).
"""

from __future__ import annotations

from datetime import timedelta
from types import ModuleType
from typing import Any

#: Each backend raised, by ``id``, with the timeout it had of its own (what goes back). The
#: backend is kept with it so that its id is not reused while it is here.
_OWN: dict[int, tuple[Any, timedelta]] = {}


def backends(c10d: Any) -> list[Any]:
    """Every backend of every process group of this rank (a ``"cpu:gloo,cuda:nccl"`` group
    has two), each once."""
    found: dict[int, Any] = {}
    for group in list(c10d._world.pg_names):
        for device in getattr(group, "_device_types", []):
            try:
                backend = group._get_backend(device)
            except RuntimeError:  # no backend for that device (torch lists it anyway)
                continue
            if hasattr(backend, "_set_default_timeout") and hasattr(backend, "options"):
                found.setdefault(id(backend), backend)
    return list(found.values())


def hold_off(dist: ModuleType | None, seconds: float | None) -> dict[str, Any]:
    """Give every backend of this rank's groups ``seconds`` (None: each its own again), and
    say what it did: ``{"seconds", "backends", "own"}`` (``own``: the timeouts they had)."""
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return {"seconds": None, "backends": 0, "own": []}
    current = backends(dist.distributed_c10d)
    own = {_seconds(_OWN[id(b)][1] if id(b) in _OWN else b.options._timeout) for b in current}
    for backend in current:
        key = id(backend)
        if seconds is None:
            kept = _OWN.pop(key, None)
            if kept is not None:
                backend._set_default_timeout(kept[1])
            continue
        if key not in _OWN:
            _OWN[key] = (backend, backend.options._timeout)
        backend._set_default_timeout(timedelta(seconds=seconds))
    if seconds is None:
        _OWN.clear()  # backends of groups destroyed meanwhile: nothing to give back to
    return {"seconds": seconds, "backends": len(current), "own": sorted(own)}


def _seconds(value: Any) -> float:
    return value.total_seconds() if isinstance(value, timedelta) else float(value)
