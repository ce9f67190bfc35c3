"""Keeps each held worker's record current: what every interface lists.

The upstream knows the debug state (stopped or running, why it stopped); the record says it
in the words a person reads: kind, exception type and message, ``file:line`` and function, and
which task or actor method runs there (the dashboard names it about a second after the pause).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from raydap.adapter import State, Upstream, UpstreamError
from raydap.bridge.cluster.dashboard import DashboardError
from raydap.bridge.workers.naming import Namer, RayState
from raydap.bridge.workers.records import ExceptionInfo, Location, RecordState
from raydap.bridge.workers.registry import Registry

log = logging.getLogger(__name__)

#: A record still named while in these states: once it runs on, its next stop names it anew.
_NAMEABLE = frozenset({RecordState.CONNECTING, RecordState.PAUSED})

#: Ray reports task events to the dashboard in batches about a second apart, so a task that
#: just paused may not be listed yet: ask again this often, for this long.
DESCRIBE_EVERY, DESCRIBE_FOR = 0.25, 10.0
#: A loaded head may report it much later (the dashboard busy, events queued behind a
#: thousand ranks'): a worker still unnamed is asked about ever less often, up to this, for
#: as long as it stays paused, so it is never left unnamed for good.
DESCRIBE_AT_MOST_EVERY = 8.0


class RecordKeeper:
    def __init__(self, registry: Registry, ray: RayState | None = None) -> None:
        self.registry = registry
        self._namer = Namer(ray) if ray is not None else None
        self._tasks: set[asyncio.Task[Any]] = set()

    def update(self, rid: str, upstream: Upstream) -> None:
        """The worker's state changed (stopped, resumed, a client came or left)."""
        record = self.registry.get(rid)
        if record is None:
            return
        state = RecordState.PAUSED if upstream.state is State.STOPPED else RecordState.RUNNING
        update: dict[str, Any] = {"state": state, "clients": len(upstream.clients)}
        if state is RecordState.RUNNING and record.live:
            update["location"] = None  # it runs on: where it was is no longer where it is
        stop = upstream.stops.top()
        if state is RecordState.PAUSED and record.state != RecordState.PAUSED and stop is not None:
            if (
                record.state == RecordState.RUNNING
            ):  # a later stop; the first keeps its discovery time
                update["paused_since"] = time.time()
                update["task_id"] = None  # it may be another task now: named again below
            body = stop.body if isinstance(stop.body, dict) else {}
            if body.get("reason") == "exception":
                update["kind"] = "exception"
                update["exception"] = ExceptionInfo(
                    type=str(body.get("text") or "Exception"),
                    message=str(body.get("description") or ""),
                )
            else:
                update["kind"], update["exception"] = "breakpoint", None
            update["location"] = None
            self._spawn(self._locate(rid, upstream))
            self._spawn(self._name_task(rid, upstream))
        self.registry.put(record.model_copy(update=update))

    async def _name_task(self, rid: str, upstream: Upstream) -> None:
        """Fill in job, task and actor once Ray reports them (:mod:`.naming`): promptly for
        ``DESCRIBE_FOR`` s, then ever less often while the worker stays paused unnamed."""
        if self._namer is None:
            return
        deadline, wait = time.monotonic() + DESCRIBE_FOR, DESCRIBE_EVERY
        while (record := self.registry.get(rid)) is not None:
            last_try = time.monotonic() >= deadline
            try:
                names = await self._namer.describe(record, upstream, last_try=last_try)
            except DashboardError as exc:
                log.debug("cannot name %s yet: %s", rid, exc)
                names = None
            current = self.registry.get(rid)
            if current is None:
                return
            if names is not None:
                named = current.model_copy(update=names)
                self.registry.put(named)
                upstream.name = named.label  # clients' messages about it name the task
                return
            if last_try:
                if current.state not in _NAMEABLE:
                    return  # it ran on unnamed: its next stop names it anew
                wait = min(wait * 2, DESCRIBE_AT_MOST_EVERY)
            await asyncio.sleep(wait)

    async def _locate(self, rid: str, upstream: Upstream) -> None:
        """Ask the worker for its top frame, so lists can show file:line and function."""
        try:
            _, frames = await upstream.stack(levels=1)
        except UpstreamError:
            return
        record = self.registry.get(rid)
        if record is None:
            return
        top = frames[0]
        location = Location(
            path=str((top.get("source") or {}).get("path") or "<unknown>"),
            line=int(top.get("line") or 0),
            function=str(top.get("name") or "?"),
        )
        self.registry.put(record.model_copy(update={"location": location}))

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
