"""A live worker's own stacks, for the bridge's ``raydapStacks`` request: every thread's frames
as the interpreter has them, read in the worker while it runs, never pausing it.

The bridge already holds a live worker's debug connection, so its stacks (and the hang watch's
samples) need neither py-spy, nor ptrace, nor a Ray driver on the node: a Kubernetes
"restricted" pod allows no ``SYS_PTRACE``. pydevd runs :func:`answer` on its reader thread;
its own threads are left out. Locals are shown as py-spy shows them, without calling the
program's code: builtin scalars and strings by value, anything else by type (and size), so
that no ``__repr__`` runs on a thread the program does not expect.
"""

from __future__ import annotations

import os
import sys
import threading
from types import FrameType
from typing import Any

#: Frames per thread, locals per frame, characters per value, threads: what the bridge keeps.
MAX_FRAMES = 128
MAX_LOCALS = 64
MAX_REPR = 200
MAX_THREADS = 256
#: Environment variables asked for, and characters of each (the rank's identity).
MAX_VARIABLES = 16
MAX_VALUE = 64


def answer(arguments: dict[str, Any]) -> dict[str, Any]:
    """``{"pid", "threads": [{"name", "os_thread_id", "frames": [{"function", "path", "line",
    "locals"?}]}], "environment"}``: the main thread first, innermost frame first.
    ``locals: true`` adds each frame's locals; ``environment``: names to read."""
    with_locals = bool(arguments.get("locals"))
    by_ident = {t.ident: t for t in threading.enumerate()}
    here = threading.get_ident()
    threads = []
    for ident, top in sys._current_frames().items():
        thread = by_ident.get(ident)
        if ident == here or getattr(thread, "is_pydev_daemon_thread", False):
            continue
        threads.append({
            "name": thread.name if thread is not None else f"Thread {ident}",
            "os_thread_id": getattr(thread, "native_id", None),
            "frames": _frames(top, with_locals),
        })  # fmt: skip
    main = threading.main_thread().name
    threads.sort(key=lambda t: t["name"] != main)
    wanted = [str(n) for n in arguments.get("environment") or []][:MAX_VARIABLES]
    return {
        "pid": os.getpid(),
        "threads": threads[:MAX_THREADS],
        "environment": {n: os.environ[n][:MAX_VALUE] for n in wanted if n in os.environ},
    }


def _frames(top: FrameType, with_locals: bool) -> list[dict[str, Any]]:
    frames: list[dict[str, Any]] = []
    frame: FrameType | None = top
    while frame is not None and len(frames) < MAX_FRAMES:  # named as py-spy names them
        code = frame.f_code
        entry: dict[str, Any] = {
            "function": getattr(code, "co_qualname", code.co_name),
            "path": code.co_filename,
            "line": frame.f_lineno or 0,
        }
        if with_locals:
            entry["locals"] = _locals(frame)
        frames.append(entry)
        frame = frame.f_back
    return frames


def _locals(frame: FrameType) -> dict[str, str]:
    try:
        items = list(frame.f_locals.items())[:MAX_LOCALS]
    except Exception:  # a frame ending under us
        return {}
    return {str(name): shown(value) for name, value in items}


def shown(value: object) -> str:
    """A value as py-spy would show it, without running the program's code."""
    kind = type(value)
    if kind is int and value.bit_length() > 256:  # type: ignore[attr-defined]
        text = f"<int of {value.bit_length()} bits>"  # type: ignore[attr-defined]
    elif value is None or kind in (bool, int, float, complex):
        text = repr(value)
    elif kind in (str, bytes):
        text = repr(value[:MAX_REPR])  # type: ignore[index]
    elif kind in (list, tuple, dict, set, frozenset):
        text = f"<{kind.__name__} of {len(value)}>"  # type: ignore[arg-type]
    else:
        text = f"<{kind.__module__}.{kind.__qualname__}>"
    return text if len(text) <= MAX_REPR else text[: MAX_REPR - 1] + "…"
