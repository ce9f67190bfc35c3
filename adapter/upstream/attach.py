"""The attach handshake with a worker's debugpy, for an :class:`~.connection.Upstream`, and
what it waits for. The worker is seen only through :class:`Attaching`.

Order matters to debugpy 1.8: it answers ``attach`` only after ``configurationDone``, sends
``initialized`` only when the attach arguments are not empty, and reports a post-mortem stop
only if the ``uncaught`` exception filter was set before ``configurationDone``. ``justMyCode``
must be false: Ray stops the worker with ``pydevd.settrace`` called from Ray's own (library)
frame, and with ``justMyCode`` true debugpy never reports that stop. ``showReturnValue`` (VS
Code's default) lists a function's return value after stepping out of it, for every client of
the worker."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from raydap.protocol import Response

#: Whether a worker's children are debugged is the worker's choice (``debugpy.configure``
#: before it listens: ``RAYDAP_CHILDREN=0``); the attach arguments do not change it.
ATTACH = {"justMyCode": False, "showReturnValue": True}
INITIALIZE = {
    "clientID": "raydap",
    "clientName": "raydap bridge",
    "adapterID": "python",
    "pathFormat": "path",
    "linesStartAt1": True,
    "columnsStartAt1": True,
    "supportsVariableType": True,
    "supportsStartDebuggingRequest": False,
}


class Attaching(Protocol):
    """The worker being attached to."""

    #: A child process of a worker is attached to through the worker's debugpy adapter.
    child_pid: int | None

    async def request(
        self, command: str, arguments: Any = None, *, timeout: float | None = None
    ) -> Response: ...


class Waits:
    """What the handshake waits for: debugpy's ``initialized``, and the worker's first stop.
    Beside the life table, not phases of it: what a coroutine waits for."""

    def __init__(self) -> None:
        self.initialized = asyncio.Event()
        self.first_stop = asyncio.Event()

    def over(self) -> None:
        """Nothing is waited for any more (a connection another bridge process attached)."""
        self.initialized.set()
        self.first_stop.set()


async def handshake(
    worker: Attaching,
    waits: Waits,
    *,
    timeout: float,
    expect_stop: bool,
    configure: Callable[[], Awaitable[None]] | None,
) -> dict[str, Any]:
    """Attach, let ``configure`` send breakpoints before the worker runs, and wait for its
    first stop if ``expect_stop``; returns debugpy's capabilities."""
    initialize = await worker.request("initialize", dict(INITIALIZE), timeout=timeout)
    arguments: dict[str, Any] = dict(ATTACH)
    if worker.child_pid is not None:
        arguments["subProcessId"] = worker.child_pid
    attach = asyncio.ensure_future(worker.request("attach", arguments, timeout=timeout))
    try:
        await asyncio.wait_for(waits.initialized.wait(), timeout)
        await worker.request("setExceptionBreakpoints", {"filters": ["uncaught"]}, timeout=timeout)
        if configure is not None:
            await configure()
        await worker.request("configurationDone", timeout=timeout)
        await attach
        if expect_stop:
            await asyncio.wait_for(waits.first_stop.wait(), timeout)
    except BaseException:
        attach.cancel()
        raise
    return dict(initialize.body or {})
