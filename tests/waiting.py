"""Waiting for what a person would look at: the one helper of every test layer.

A test waits for a condition, never for a fixed time: under a loaded CI machine a worker stops,
a file is saved or a line is printed later than on a quiet one, and a sleep that was long
enough here fails there. ``until`` (in a coroutine) and ``wait_until`` (in a plain test) ask
``check`` again until it returns something true, and return that; when the time is up they
fail with ``what`` was awaited, the last answer, and ``context()`` (a bridge's log, say).

A sleep that checks that nothing happens stays a sleep: it is bounded and says so where it is.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


def _failure(what: str, timeout: float, last: object, context: Callable[[], str] | None) -> str:
    text = f"{what} not within {timeout:g} s; last: {last!r}"
    return f"{text}\n{context()}" if context is not None else text


async def until(
    check: Callable[[], T | Awaitable[T]],
    *,
    timeout: float = 10.0,
    every: float = 0.01,
    what: str | None = None,
    context: Callable[[], str] | None = None,
) -> T:
    """``check``'s first true answer (it may be a coroutine function), asked every ``every`` s."""
    deadline = time.monotonic() + timeout
    while True:
        answer = check()
        last = await answer if inspect.isawaitable(answer) else answer
        if last:
            return last  # type: ignore[return-value]
        if time.monotonic() >= deadline:
            raise AssertionError(_failure(what or _name(check), timeout, last, context))
        await asyncio.sleep(every)


def wait_until(
    check: Callable[[], T],
    *,
    timeout: float = 30.0,
    every: float = 0.1,
    what: str | None = None,
    context: Callable[[], str] | None = None,
) -> T:
    """``check``'s first true answer, asked every ``every`` s (for tests without a loop)."""
    deadline = time.monotonic() + timeout
    while True:
        last = check()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise AssertionError(_failure(what or _name(check), timeout, last, context))
        time.sleep(every)


def _name(check: Callable[..., Any]) -> str:
    name = getattr(check, "__name__", "the condition")
    return "the condition" if name == "<lambda>" else name


def nodes_alive_script(dashboard: str, count: int, tries: int = 240) -> str:
    """Python source that waits until the dashboard at ``dashboard`` lists ``count`` alive Ray
    nodes (exit 0), or says that they did not come up (exit 1): run where the dashboard is
    reachable (another network namespace, a container)."""
    return f"""
import json, time, urllib.request
for _ in range({tries}):
    try:
        with urllib.request.urlopen("{dashboard}/api/v0/nodes?detail=1", timeout=2) as r:
            nodes = json.loads(r.read())["data"]["result"]["result"]
        if sum(n["state"] == "ALIVE" for n in nodes) >= {count}:
            break
    except OSError:
        pass
    time.sleep(0.25)
else:
    raise SystemExit("the Ray nodes did not come up")
"""
