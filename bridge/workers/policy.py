"""When the bridge lets go of a held worker, or lets it run.

A worker resumed with nobody watching is let go after ``DETACH_GRACE`` (detached: no longer
listed or held; its next ``breakpoint()`` is discovered afresh); a worker nobody touched for
``hold_timeout`` is resumed, so a forgotten pause does not hold a job forever. (Detaching does
not make a plain worker faster: debugpy leaves its trace function in place, 2-3x on Python
calls on 3.11 either way, measured with debugpy 1.8.22.)
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from raydap.adapter import State, Upstream

log = logging.getLogger(__name__)

#: How long a resumed, unwatched worker stays held before it is detached. debugpy resumes a stop
#: that reaches it while it handles ``disconnect``, so a detach can lose the next
#: ``breakpoint()`` of a worker continued in a loop: one stop in a soak of 64 was lost with 1 s
#: on a loaded 2-core CI machine (a worker took a second to reach its next stop). A stop within
#: the grace is simply held.
DETACH_GRACE = 5.0

#: Resumes one held worker by id (the holder's ``resume``).
Resume = Callable[[str], Awaitable[Any]]


class HoldPolicy:
    def __init__(
        self, *, hold_timeout: float | None = None, detach_grace: float = DETACH_GRACE
    ) -> None:
        self.hold_timeout = hold_timeout
        self.detach_grace = detach_grace
        self._touched: dict[str, float] = {}
        #: When each worker waiting out its grace last started to run unwatched.
        self._unwatched_since: dict[str, float] = {}
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
        """The worker's state changed: detach it once it has run unwatched for the grace."""
        if rid in self._kept or upstream.state is not State.RUNNING or upstream.clients:
            return
        waiting = rid in self._unwatched_since
        self._unwatched_since[rid] = time.monotonic()  # a later resume starts the grace again
        if waiting:
            return
        task = asyncio.create_task(self._detach_if_idle(rid, upstream))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _detach_if_idle(self, rid: str, upstream: Upstream) -> None:
        """Not at once: a worker continued in a loop often hits its next ``breakpoint()``
        within moments, and a stop that reaches debugpy while it processes ``disconnect`` is
        resumed by it and lost. The grace counts from the worker's last resume; a stop
        within it is simply held."""
        try:
            # A deadline that moves: resumed again meanwhile, the grace counts from then.
            left = self._unwatched_since[rid] + self.detach_grace - time.monotonic()
            while left > 0:
                await asyncio.sleep(left)
                left = self._unwatched_since[rid] + self.detach_grace - time.monotonic()
            if upstream.state is State.RUNNING and not upstream.clients:
                await upstream.detach()
        finally:
            self._unwatched_since.pop(rid, None)

    async def expire(self, upstreams: dict[str, Upstream], resume: Resume) -> None:
        """Resume workers nobody touched for ``hold_timeout`` seconds (if set)."""
        if self.hold_timeout is None:
            return
        now = time.monotonic()
        for rid, upstream in list(upstreams.items()):
            idle = now - self._touched.get(rid, now)
            if (
                upstream.state is State.STOPPED
                and not upstream.debugged  # a session that only looks keeps nothing held
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
