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
from typing import Any

from raydap.adapter import State, Upstream
from raydap.bridge.cluster.dashboard import DashboardError
from raydap.bridge.workers.registry import Registry

log = logging.getLogger(__name__)

#: A task's state as the dashboard reports it (``task_id`` -> ``FINISHED`` ...), or None.
TaskState = Callable[[str], Awaitable[str | None]]
ENDED = {"FINISHED": "finished", "FAILED": "failed"}


class TaskEndWatch:
    def __init__(self, registry: Registry, task_state: TaskState, every: float = 1.0) -> None:
        self.registry = registry
        self.every = every
        self._task_state = task_state
        self._watching: set[str] = set()
        self._tasks: set[asyncio.Task[Any]] = set()

    def update(self, rid: str, upstream: Upstream) -> None:
        """The worker's state changed: watch it while it runs with clients attached."""
        if upstream.state is State.RUNNING and upstream.clients and rid not in self._watching:
            self._watching.add(rid)
            task = asyncio.create_task(self._watch(rid, upstream))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _watch(self, rid: str, upstream: Upstream) -> None:
        try:
            while upstream.state is State.RUNNING and upstream.clients:
                await asyncio.sleep(self.every)
                record = self.registry.get(rid)
                if record is None or record.task_id is None or upstream.state is not State.RUNNING:
                    continue
                try:
                    state = await self._task_state(record.task_id)
                except DashboardError as exc:
                    log.debug("cannot tell whether the task of %s ended: %s", rid, exc)
                    continue
                if state not in ENDED or upstream.state is not State.RUNNING:
                    continue
                task = record.task_name or "its task"
                if record.actor_id is not None:
                    upstream.announce(
                        f"raydap: {task} {ENDED[state]}; the actor lives on, and its next "
                        f"breakpoint stops here ({record.label})"
                    )
                else:
                    log.info("%s: task %s %s; letting go", rid, task, ENDED[state])
                    await upstream.detach(
                        f"task {task} {ENDED[state]}; nothing more stops in this session "
                        "(the worker process lives on, idle, for Ray to reuse)"
                    )
                return
        finally:
            self._watching.discard(rid)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
