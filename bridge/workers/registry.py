"""The paused workers the bridge knows of, with a feed of every change.

Interfaces read the registry; discovery and the holder write it. Every change is published to
subscribers (the events WebSocket, follow sessions) so nobody has to poll. A subscriber that
falls behind is never dropped silently: it gets a :class:`Resync` and reloads the records.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeVar

from raydap.adapter.errors import Kind, WorkerError
from raydap.bridge.workers.records import BreakpointRecord

ChangeKind = Literal["added", "updated", "removed"]


@dataclass(frozen=True)
class Change:
    kind: ChangeKind
    record: BreakpointRecord


@dataclass(frozen=True)
class Resync:
    """Changes were lost because the subscriber fell behind: read :meth:`Registry.records`
    again, then go on with the changes that follow."""

    why: str


class Subscription:
    """One subscriber's changes, in order, up to a limit; past it, one :class:`Resync`."""

    def __init__(self, limit: int) -> None:
        self._queue: asyncio.Queue[Change | Resync] = asyncio.Queue()
        self._arrived = asyncio.Event()
        self._limit = limit
        self._behind = False

    def qsize(self) -> int:
        return self._queue.qsize()

    async def get(self) -> Change | Resync:
        return self._taken(await self._queue.get())

    def get_nowait(self) -> Change | Resync:
        return self._taken(self._queue.get_nowait())

    async def next_within(self, timeout: float) -> Change | Resync | None:
        """The next change, or None after ``timeout`` seconds. Not ``asyncio.wait_for`` on
        ``get``: on 3.10 and 3.11 it returns the change that comes at the moment its task is
        cancelled and drops the cancel, which kept a stopping bridge's loop over changes running
        until it was killed. Here a change is taken only once the wait is over: a cancel leaves
        it queued."""
        if self._queue.empty():
            self._arrived.clear()
            arrived = asyncio.ensure_future(self._arrived.wait())
            try:
                await asyncio.wait({arrived}, timeout=timeout)
            finally:
                arrived.cancel()
        return None if self._queue.empty() else self.get_nowait()

    def offer(self, change: Change) -> None:
        if self._behind:
            return  # the records it reloads will have it
        self._arrived.set()
        if self._queue.qsize() < self._limit:
            self._queue.put_nowait(change)
            return
        while not self._queue.empty():
            self._queue.get_nowait()
        self._behind = True
        self._queue.put_nowait(Resync(f"more than {self._limit} changes were waiting to be read"))

    def _taken(self, item: Change | Resync) -> Change | Resync:
        if isinstance(item, Resync):
            self._behind = False  # it reloads now: changes from here on are news again
        return item


T = TypeVar("T")


class LookupFailed(WorkerError, LookupError):
    """An id that names no worker, or more than one."""

    default_kind = Kind.NOT_FOUND


class Registry:
    def __init__(self, max_queued_changes: int = 10_000) -> None:
        self._records: dict[str, BreakpointRecord] = {}
        self._subscribers: set[Subscription] = set()
        self._max_queued = max_queued_changes
        #: Told a record's id when what a rank set matches of it (its rank, role or mesh)
        #: changed: what was given to a rank set is given again (or taken back).
        self.on_rank_facts: list[Callable[[str], None]] = []

    def __len__(self) -> int:
        return len(self._records)

    def __contains__(self, record_id: str) -> bool:
        return record_id in self._records

    def records(self) -> list[BreakpointRecord]:
        """All records, longest paused first."""
        return sorted(self._records.values(), key=lambda r: (r.paused_since, r.id))

    def get(self, record_id: str) -> BreakpointRecord | None:
        return self._records.get(record_id)

    def resolve(self, id_or_prefix: str) -> BreakpointRecord:
        """The one record whose id starts with ``id_or_prefix``."""
        if not id_or_prefix:
            raise LookupFailed("no breakpoint id given; `raydap list` shows them")
        exact = self._records.get(id_or_prefix)
        if exact is not None:
            return exact
        matches = [r for r in self._records.values() if r.id.startswith(id_or_prefix)]
        if not matches:
            raise LookupFailed(
                f"no paused worker with id {id_or_prefix!r}; `raydap list` shows the current ones"
            )
        if len(matches) > 1:
            ids = ", ".join(sorted(r.id for r in matches))
            raise LookupFailed(f"id {id_or_prefix!r} is ambiguous ({ids}); give more characters")
        return matches[0]

    def put(self, record: BreakpointRecord) -> None:
        """Add or replace a record; publishes only when something changed."""
        old = self._records.get(record.id)
        if old == record:
            return
        self._records[record.id] = record
        self._publish(Change("added" if old is None else "updated", record))
        if old is not None and (old.rank, old.role, old.mesh) != (
            record.rank, record.role, record.mesh
        ):  # fmt: skip
            for hook in self.on_rank_facts:
                hook(record.id)

    def remove(self, record_id: str) -> None:
        record = self._records.pop(record_id, None)
        if record is not None:
            self._publish(Change("removed", record))

    async def until(self, found: Callable[[], T | None], timeout: float) -> T | None:
        """What ``found`` returns once it is not None, asked again at each change of the
        records; None if it still is after ``timeout`` seconds."""
        subscription = self.subscribe()
        deadline = time.monotonic() + timeout
        try:
            while (answer := found()) is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                await subscription.next_within(remaining)
            return answer
        finally:
            self.unsubscribe(subscription)

    def subscribe(self) -> Subscription:
        subscription = Subscription(self._max_queued)
        self._subscribers.add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self._subscribers.discard(subscription)

    def _publish(self, change: Change) -> None:
        for subscription in list(self._subscribers):
            subscription.offer(change)
