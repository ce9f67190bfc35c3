"""What a stack's frames mean to a person looking for a hang (sans-I/O).

- Whose frames they are: the job's and its libraries', or Ray's and Python's own plumbing,
  folded by default as debuggers' "just my code" does (:func:`fold`), except where a rank
  waits, since that is the point.
- Whether a stack waits, and on what: a collective, a lock, a queue, an event, ``ray.get``,
  a CUDA sync (:func:`wait_of`). A stack is given innermost frame first, as py-spy and DAP
  list them.

Paths are judged by their shape, not by this machine's installation: a worker's Python may
live elsewhere than the bridge's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from raydap.bridge.cluster.pyspy import Frame

_RAY = re.compile(r"(^|/)(site|dist)-packages/ray/|(^|/)python/ray/|^ray/|\.pyx$")
_DEBUGGER = re.compile(r"(^|/)(debugpy|pydevd|_pydevd_bundle|_pydev_bundle)[^/]*/")
#: The standard library: ``.../lib/python3.11/threading.py``, not its site-packages.
_STDLIB = re.compile(r"(^|/)lib/python3\.\d+/(?!site-packages/|dist-packages/)")

#: torch.distributed's collectives, as their Python functions are named.
COLLECTIVES = frozenset({
    "all_reduce", "all_gather", "all_gather_into_tensor", "all_gather_object", "all_to_all",
    "all_to_all_single", "barrier", "broadcast", "broadcast_object_list", "gather", "recv",
    "reduce", "reduce_scatter", "reduce_scatter_tensor", "scatter", "send", "monitored_barrier",
})  # fmt: skip
_C10D = re.compile(r"torch/distributed/distributed_c10d\.py$")

#: Other waits, by the file their innermost Python frame is in and its function.
_WAITS: tuple[tuple[re.Pattern[str], frozenset[str], str], ...] = (
    (re.compile(r"(^|/)threading\.py$"), frozenset({"wait", "acquire", "join", "_wait_for_tstate_lock"}), "lock or event"),  # noqa: E501
    (re.compile(r"(^|/)queue\.py$"), frozenset({"get", "put", "join"}), "queue"),
    (re.compile(r"(^|/)multiprocessing/"), frozenset({"get", "put", "join", "wait", "recv", "recv_bytes", "_recv_bytes", "poll", "_poll", "acquire"}), "multiprocessing"),  # noqa: E501
    (re.compile(r"(^|/)concurrent/futures/"), frozenset({"result", "wait", "as_completed"}), "future"),  # noqa: E501
    (re.compile(r"(^|/)selectors\.py$"), frozenset({"select"}), "select"),
    (re.compile(r"(^|/)ray/_private/worker\.py$"), frozenset({"get", "wait", "get_objects"}), "ray.get"),  # noqa: E501
    # CUDA syncs: where an NCCL rank waits for a collective it issued (NCCL's return at once).
    # ``.item()`` and ``Work.wait()`` are native, under the job's own line: judged by the
    # recorders instead (:meth:`raydap.bridge.hangs.verdicts.JobWatch.observe`).
    (re.compile(r"(^|/)torch/cuda/(__init__|streams)\.py$"), frozenset({"synchronize", "wait"}), "cuda sync"),  # noqa: E501
)  # fmt: skip


def is_plumbing(frame: Frame) -> bool:
    """Ray's, debugpy's or the standard library's frame (or a native one)."""
    path = frame.path
    return (
        frame.native
        or path.startswith("<frozen ")
        or bool(_RAY.search(path) or _DEBUGGER.search(path) or _STDLIB.search(path))
    )


def fold(frames: Sequence[Frame]) -> list[Frame]:
    """The frames a person reads: the job's (and its libraries'), plus the plumbing below
    the innermost of them (where the rank waits: ``threading.wait``, a native wait).
    A stack of nothing but plumbing is kept whole."""
    innermost_own = next((i for i, f in enumerate(frames) if not is_plumbing(f)), None)
    if innermost_own is None:
        return list(frames)
    return [*frames[:innermost_own], *(f for f in frames[innermost_own:] if not is_plumbing(f))]


@dataclass(frozen=True)
class Wait:
    """What a stack waits on: ``kind`` (``collective``, ``queue``, ...), ``name`` (the
    collective's, or the waiting function), and the frame that waits."""

    kind: str
    name: str
    frame: Frame


def collective_of(frames: Sequence[Frame]) -> Frame | None:
    """The torch.distributed collective frame a stack is in, if any."""
    return next(
        (f for f in frames if _C10D.search(f.path) and f.function.split(".")[-1] in COLLECTIVES),
        None,
    )


def wait_of(frames: Sequence[Frame]) -> Wait | None:
    """The wait a stack is in, judged by its innermost Python frames; None for a stack that
    computes (or waits somewhere this does not know)."""
    if (frame := collective_of(frames)) is not None:
        return Wait("collective", frame.function.split(".")[-1], frame)
    python = [f for f in frames if not f.native]
    for index, frame in enumerate(python[:3]):  # a wait's own helpers sit just above it
        function = frame.function.split(".")[-1]
        for path, functions, kind in _WAITS:
            if function in functions and path.search(frame.path):
                # The outermost of its kind names it: ``Event.wait`` over ``Condition.wait``.
                for caller in python[index + 1 : index + 3]:
                    if caller.function.split(".")[-1] not in functions or not path.search(
                        caller.path
                    ):
                        break
                    frame = caller
                return Wait(kind, function, frame)
    return None
