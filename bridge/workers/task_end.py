"""Ends what a finished task leaves behind: a session attached to a worker that no longer runs
the task it paused in.

Ray keeps a worker process alive after its task returns, so debugpy's connection (and the
editor's session with it) would show a running thread until the process exits. While a
watched worker runs, the dashboard is asked about its task every ``every`` seconds. When the
task has ended, a task's worker is let go (its sessions say why and end, with ``terminated``
for a single-worker session; its next ``breakpoint()`` is discovered afresh); an actor's
worker stays held, since its next method call may stop there, and its sessions are told that
the method returned.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from raydap.adapter import State, Upstream
from raydap.bridge.cluster.dashboard import DashboardError
from raydap.bridge.workers.registry import Registry

log = logging.getLogger(__name__)

#: A task's state as the dashboard reports it (``task_id`` -> ``FINISHED`` ...), or None.
TaskState = Callable[[str], Awaitable[str | None]]
ENDED = {"FINISHED": "finished", "FAILED": "failed"}


class TaskEndWatch:
    """One loop for every watched worker, asking about at most ``per_round`` of them each
    round (so a thousand running ranks cost the dashboard 20 requests a second, not 1,000)."""

    def __init__(
        self, registry: Registry, task_state: TaskState, every: float = 1.0, per_round: int = 20
    ) -> None:
        self.registry = registry
        self.every = every
        self.per_round = per_round
        self._task_state = task_state
        self._watched: dict[str, Upstream] = {}
        self._loop: asyncio.Task[None] | None = None

    @property
    def watching(self) -> int:
        """How many workers are still asked about (a stopped one leaves at its next turn)."""
        return len(self._watched)

    def update(self, rid: str, upstream: Upstream) -> None:
        """The worker's state changed: watch it while it runs with clients attached."""
        if upstream.state is State.RUNNING and upstream.clients:
            self._watched[rid] = upstream
            if self._loop is None or self._loop.done():
                self._loop = asyncio.create_task(self._watch())
        else:
            self._watched.pop(rid, None)

    async def _watch(self) -> None:
        while self._watched:
            await asyncio.sleep(self.every)
            batch = list(self._watched.items())[: self.per_round]
            for rid, _ in batch:  # the rest go first next round
                self._watched[rid] = self._watched.pop(rid)
            await asyncio.gather(*(self._check(rid, upstream) for rid, upstream in batch))

    async def _check(self, rid: str, upstream: Upstream) -> None:
        record = self.registry.get(rid)
        if upstream.state is not State.RUNNING or not upstream.clients or record is None:
            self._watched.pop(rid, None)  # stopped again, unwatched, or gone
            return
        if record.task_id is None:
            return  # not named yet
        try:
            state = await self._task_state(record.task_id)
        except DashboardError as exc:
            log.debug("cannot tell whether the task of %s ended: %s", rid, exc)
            return
        if state not in ENDED or upstream.state is not State.RUNNING or not upstream.clients:
            return
        self._watched.pop(rid, None)
        task = record.task_name or "its task"
        if record.actor_id is not None:
            upstream.announce(
                f"raydap: {task} {ENDED[state]}; the actor lives on, and its next "
                f"breakpoint stops here ({record.label})"
            )
            return
        log.info("%s: task %s %s; letting go", rid, task, ENDED[state])
        await upstream.detach(
            f"task {task} {ENDED[state]}; nothing more stops in this session "
            "(the worker process lives on, idle, for Ray to reuse)"
        )

    async def close(self) -> None:
        if self._loop is not None:
            self._loop.cancel()
