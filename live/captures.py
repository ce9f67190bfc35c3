"""Capture points in a live worker: record the frame and run on, never stop.

The bridge gives a capture point to every live worker as a plain debugpy breakpoint whose
condition calls :func:`hit` (see :mod:`raydap.adapter.captures.points`) and is always false, so
pydevd never suspends the thread and never sends ``stopped``: debugpy's own machinery finds the
line, in children and in workers that start later, on every Python it supports. :func:`hit`
applies the point's limits, reads the frame (:mod:`.capture_values`, which runs nothing of the
program) and queues the capture for the bridge (:data:`CAPTURE`); it never raises and never
waits. A point whose captures cost the worker more than its budget twice in a row turns itself
off here, at once, and says why. One costly capture alone is not the point's doing: the first
after the breakpoints change pays for pydevd looking at every function it then traces afresh
(120-165 ms of CPU, measured in the doors' e2e test when another point was set; a capture
costs about 1 ms), and a shared host's stolen CPU counts as the thread's.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import gc
import json
import logging
import os
import sys
import threading
import time
import types
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from raydap.live import to_bridge
from raydap.live.capture_values import Bounds, read_frames, read_traceback, read_value
from raydap.live.collectives import job_of
from raydap.live.redact import Redactor
from raydap.protocol.extension import CAPTURE

log = logging.getLogger(__name__)

#: Around the calls of a condition made by :func:`condition`.
_CONDITION_HEAD = "(lambda _c: any(["
_CONDITION_TAIL = "]))(__import__('raydap.live.captures', fromlist=['hit']))"
#: The frame of pydevd that evaluates a breakpoint's condition, and its local naming the
#: frame that reached the line.
_CONDITION_FRAME, _HIT_FRAME = "handle_breakpoint_condition", "new_frame"
#: A point turns itself off after this many captures in a row over its budget.
OVER_BUDGET = 2


@dataclass(frozen=True)
class Limits:
    """A point's limits in each worker (the bridge's defaults fill every field it sends)."""

    #: At most one capture this often, per worker.
    interval: float = 1.0
    #: At most this many captures in all, per worker.
    most: int = 50
    #: The point stops capturing at this time (seconds since the epoch; 0: never).
    until: float = 0.0
    #: Captures that take longer, :data:`OVER_BUDGET` in a row, turn the point off in this
    #: worker.
    budget_ms: float = 50.0


@dataclass
class _Point:
    """What this worker knows of one point: its settings, and what it did so far."""

    id: str
    limits: Limits
    rank: int | None
    job: str | None
    condition: types.CodeType | None
    bounds: Bounds
    hits: int = 0
    taken: int = 0
    last: float = float("-inf")
    off: str | None = None
    #: Its last captures that went over the budget, one after the other.
    over: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


_points: dict[str, _Point] = {}
_points_lock = threading.Lock()


def hit(point: str, settings: str) -> bool:
    """The condition of a capture point: capture if due, and answer False (never stop)."""
    try:
        frame = _user_frame(sys._getframe(1))
        if frame is not None:
            _hit(point, settings, frame)
    except Exception:  # a capture must never break the program or stop it
        log.debug("capture point %s failed", point, exc_info=True)
    return False


def condition(points: Sequence[tuple[str, str]]) -> str:
    """The condition a worker's breakpoint is given for the capture points of one line:
    ``(id, settings as JSON)`` each. It captures each, and is false."""
    calls = ", ".join(f"_c.hit({point!r}, {settings!r})" for point, settings in points)
    return f"{_CONDITION_HEAD}{calls}{_CONDITION_TAIL}"


def read_condition(text: str) -> list[tuple[str, str]] | None:
    """The capture points of a condition :func:`condition` made, or None for any other."""
    if not (text.startswith(_CONDITION_HEAD) and text.endswith(_CONDITION_TAIL)):
        return None
    return _read_calls(text[len(_CONDITION_HEAD) : -len(_CONDITION_TAIL)])


@functools.lru_cache(maxsize=256)
def _read_calls(calls: str) -> list[tuple[str, str]] | None:
    try:
        listed = ast.parse(f"[{calls}]", mode="eval").body
    except SyntaxError:
        return None
    found = []
    for call in listed.elts if isinstance(listed, ast.List) else []:
        if not (
            isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and call.func.attr == "hit" and isinstance(call.func.value, ast.Name)
            and call.func.value.id == "_c" and len(call.args) == 2 and not call.keywords
            and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in call.args)
        ):  # fmt: skip
            return None
        found.append((str(call.args[0].value), str(call.args[1].value)))  # type: ignore[attr-defined]
    return found or None


def skip_compiling_conditions() -> bool:
    """Teach pydevd to take a capture point's condition without compiling it at every hit.

    pydevd ``eval``s a breakpoint's condition string each time its line runs, so a point on
    a line hit a thousand times a second would compile its condition a thousand times. A
    condition :func:`condition` made is read once (cached) and its points captured straight
    from the frame pydevd gives; any other condition is pydevd's, as before. False where
    pydevd's internals moved (conditions are then evaluated as written: correct, slower)."""
    try:
        from pydevd import PyDB  # type: ignore[import-not-found]
    except ImportError:
        return False
    original = getattr(PyDB, "handle_breakpoint_condition", None)
    if original is None or getattr(original, "raydap", False):
        return original is not None

    def handle_breakpoint_condition(self: Any, info: Any, breakpoint: Any, frame: Any) -> Any:
        points = read_condition(getattr(breakpoint, "condition", None) or "")
        if points is None or getattr(breakpoint, "hit_condition", None):
            return original(self, info, breakpoint, frame)
        for point, settings in points:
            try:
                _hit(point, settings, frame)
            except Exception:  # as in hit(): never break the program
                log.debug("capture point %s failed", point, exc_info=True)
        return False

    handle_breakpoint_condition.raydap = True  # type: ignore[attr-defined]
    PyDB.handle_breakpoint_condition = handle_breakpoint_condition
    return True


def capture_exception(budget_ms: float = 1000.0) -> str:
    """Capture the exception this thread is handling (a post-mortem stop: the bridge asks it
    through the stop's ``evaluate``) and send it to the bridge; says what it did."""
    exc_type, exc, traceback = sys.exc_info()
    if exc is None:
        return "no exception is being handled here"
    started, started_cpu = time.perf_counter(), time.thread_time()
    with _no_collection():
        frames, cut = read_traceback(traceback, Bounds())
    body = {
        "exception": f"{exc_type.__name__ if exc_type else 'Exception'}: {_message(exc)}",
        "time": time.time(), "frames": frames, "cut": cut,
        "thread": threading.current_thread().name,
        "cost_ms": (time.perf_counter() - started) * 1000,
        "cpu_ms": (time.thread_time() - started_cpu) * 1000, "job": _job(), "rank": _rank(),
    }  # fmt: skip
    return "captured" if to_bridge.send_event(CAPTURE, body) else "no debugger client to send to"


def _message(exc: BaseException) -> str:
    """The exception's message, from its ``args`` (its ``__str__`` is the program's code)."""
    args = BaseException.__dict__["args"].__get__(exc)
    if len(args) == 1 and type(args[0]) is str:
        return str(args[0])[:500]
    return ", ".join(str(read_value(arg, Bounds(depth=0))["value"]) for arg in args[:5])


def forget() -> None:
    """Forget every point's state (a test's fresh start)."""
    with _points_lock:
        _points.clear()


def _hit(point_id: str, settings: str, frame: types.FrameType) -> None:
    """``frame`` reached a capture point's line: capture it if due."""
    point = _points.get(point_id) or _learn(point_id, settings)
    with point.lock:
        point.hits += 1
        if not _due(point):
            return
        if point.rank is not None and _rank() != point.rank:
            return
        if point.job is not None and _job() != point.job:
            return
        if point.condition is not None:
            try:
                if not eval(point.condition, frame.f_globals, frame.f_locals):
                    return
            except Exception:  # the user's own condition failed: no capture, as pydevd does
                return
        point.last, hit_at = time.monotonic(), time.time()  # a capture is of the moment of its hit
        point.taken += 1
        # The budget is the thread's CPU time: what the capture costs the worker, whatever
        # else the machine runs meanwhile (wall time on a busy node is mostly waiting).
        started, started_cpu = time.perf_counter(), time.thread_time()
        with _no_collection():
            frames, cut = read_frames(frame, point.bounds)
        cost_ms = (time.perf_counter() - started) * 1000
        cpu_ms = (time.thread_time() - started_cpu) * 1000
        body = {
            "point": point_id, "hit": point.hits, "time": hit_at, "cost_ms": cost_ms,
            "cpu_ms": cpu_ms, "thread": threading.current_thread().name, "frames": frames,
            "cut": cut, "job": _job(), "rank": _rank(),
        }  # fmt: skip
        point.over = point.over + 1 if cpu_ms > point.limits.budget_ms else 0
        if point.over >= OVER_BUDGET:
            point.off = (
                f"{OVER_BUDGET} captures in a row took more CPU than the point's budget of "
                f"{point.limits.budget_ms:g} ms a hit (the last: {cpu_ms:.0f} ms)"
            )
            body["disabled"] = point.off
        to_bridge.send_event(CAPTURE, body)


@contextlib.contextmanager
def _no_collection() -> Iterator[None]:
    """No garbage collection while a capture allocates: a collection it would set off is the
    program's own debt (over 100 ms of CPU in a worker that holds torch, measured), paid a
    moment later all the same, and would make the capture look costly and turn its point off.

    (The thread's tracer is left alone: putting pydevd's back with ``sys.settrace`` installs it
    through Python's slower trampoline, not pydevd's own C hook; measured, every traced line
    after the first capture cost more.)"""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _learn(point_id: str, settings: str) -> _Point:
    """A point met for the first time here: its settings parsed and its condition compiled
    once, not on every hit."""
    given: dict[str, Any] = json.loads(settings)
    limits = Limits(**{k: given[k] for k in Limits.__dataclass_fields__ if k in given})
    condition = given.get("condition")
    rank, job = given.get("rank"), given.get("job")
    bounds = Bounds(**{k: given[k] for k in ("frames", "depth", "items", "chars") if k in given},
                    redactor=Redactor.from_settings(given))  # fmt: skip
    point = _Point(
        point_id, limits, rank if isinstance(rank, int) else None,
        job if isinstance(job, str) else None,
        compile(condition, f"<capture point {point_id}>", "eval") if condition else None,
        bounds,
    )  # fmt: skip
    with _points_lock:
        return _points.setdefault(point_id, point)


def _due(point: _Point) -> bool:
    limits = point.limits
    if point.off is not None or point.taken >= limits.most:
        return False
    if limits.until and time.time() >= limits.until:
        return False
    return time.monotonic() - point.last >= limits.interval


def _user_frame(caller: types.FrameType) -> types.FrameType | None:
    """The frame that reached the line: pydevd names it while it evaluates the condition."""
    frame: types.FrameType | None = caller
    while frame is not None:
        if frame.f_code.co_name == _CONDITION_FRAME:
            found = frame.f_locals.get(_HIT_FRAME)
            return found if isinstance(found, types.FrameType) else None
        frame = frame.f_back
    return None


def _job() -> str | None:
    """The Ray job this worker runs (None outside Ray, and in a process that imported Ray but
    never joined a cluster, such as a worker's child: asking Ray there would start one)."""
    return job_of(sys.modules.get("ray"))


def _rank() -> int | None:
    """This worker's torch.distributed rank, or its environment's (``RANK``)."""
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            return int(dist.get_rank())
    except Exception:  # torch half imported or torn down: the environment says
        pass
    rank = os.environ.get("RANK", "")
    return int(rank) if rank.isdigit() else None
