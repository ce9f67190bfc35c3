"""When the bridge lets go of a held worker, or lets it run.

A worker resumed with nobody watching is detached so it runs at full speed (its next
``breakpoint()`` is then discovered afresh); a worker nobody touched for ``hold_timeout`` is
resumed, so a forgotten pause does not hold a job forever.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from raydap.adapter import State, Upstream

log = logging.getLogger(__name__)

#: Resumes one held worker by id (the holder's ``resume``).
Resume = Callable[[str], Awaitable[Any]]


class HoldPolicy:
    def __init__(self, *, hold_timeout: float | None = None, detach_grace: float = 1.0) -> None:
        self.hold_timeout = hold_timeout
        self.detach_grace = detach_grace
        self._touched: dict[str, float] = {}
        self._idle: set[str] = set()
        self._kept: set[str] = set()
        self._tasks: set[asyncio.Task[Any]] = set()

    def touch(self, rid: str) -> None:
        """Someone used this worker: its hold timeout starts again."""
        self._touched[rid] = time.monotonic()

    def forget(self, rid: str) -> None:
        self._touched.pop(rid, None)
        self._kept.discard(rid)

    def keep(self, rid: str) -> None:
        """Never detach this worker when it runs (a live worker, held for its life)."""
        self._kept.add(rid)

    def update(self, rid: str, upstream: Upstream) -> None:
        """The worker's state changed: detach it soon if it now runs unwatched."""
        if rid in self._kept or rid in self._idle:
            return
        if upstream.state is State.RUNNING and not upstream.clients:
            self._idle.add(rid)
            task = asyncio.create_task(self._detach_if_idle(rid, upstream))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _detach_if_idle(self, rid: str, upstream: Upstream) -> None:
        """Not at once: a worker continued in a loop often hits its next ``breakpoint()``
        within moments, and a stop that reaches debugpy while it processes ``disconnect`` is
        resumed by it and lost. During the grace period such a stop is simply held."""
        try:
            await asyncio.sleep(self.detach_grace)
            if upstream.state is State.RUNNING and not upstream.clients:
                await upstream.detach()
        finally:
            self._idle.discard(rid)

    async def expire(self, upstreams: dict[str, Upstream], resume: Resume) -> None:
        """Resume workers nobody touched for ``hold_timeout`` seconds (if set)."""
        if self.hold_timeout is None:
            return
        now = time.monotonic()
        for rid, upstream in list(upstreams.items()):
            idle = now - self._touched.get(rid, now)
            if (
                upstream.state is State.STOPPED
                and not upstream.clients
                and idle > self.hold_timeout
            ):
                log.info("hold timeout: resuming %s after %.0f s untouched", rid, idle)
                try:
                    await resume(rid)
                except Exception as exc:  # the worker left or refused; nothing else to do
                    log.info("could not resume %s: %s", rid, exc)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
