"""Blocking calls to Ray's GCS client, off the event loop, in a daemon thread of their own.

Ray's ``GcsClient`` blocks: made for an address where nothing answers, it waits (5 s a try,
and again); its calls wait on a GCS that went away. Run in asyncio's default executor, such a
call would hold the bridge's exit (``asyncio.run`` joins that executor's threads) past a
service manager's stop timeout. Here the thread is a daemon: a call that never returns never
keeps the process alive, and the bridge stops within seconds of SIGTERM whatever Ray does.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_Call = tuple[Callable[[], Any], asyncio.AbstractEventLoop, "asyncio.Future[Any]"]


class GcsThread:
    """Calls run one at a time, in order, in one daemon thread started on first use."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._calls: queue.SimpleQueue[_Call] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    async def call(self, function: Callable[[], T]) -> T:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name=self.name, daemon=True)
            self._thread.start()
        self._calls.put((function, loop, future))
        return await future

    def _work(self) -> None:
        while True:
            function, loop, future = self._calls.get()
            try:
                result = function()
            except BaseException as exc:  # said to the caller, whatever it is
                loop.call_soon_threadsafe(_settle, future, None, exc)
            else:
                loop.call_soon_threadsafe(_settle, future, result, None)


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.done():  # the caller gave up (cancelled)
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
