"""Which torch.distributed rank each live worker is: its rank, world and process groups.

A ``raydap.live`` worker tells the bridge its rank, world and process groups as its job makes
them (a ``raydapProcessGroups`` event on the debug connection the bridge holds), and answers a
``raydapCollectives`` request with the same and the tail of its recorder
(:mod:`raydap.live.collectives`). This is the one owner of those facts: a record's ``rank``
and ``world_size`` come from here once a worker has said them, whatever its environment says.

The debug connection is the path because it is already there: held, authenticated, one per
worker, and answered by pydevd's reader thread while the main thread waits in a collective. No
port is opened for it and nothing runs on the node.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any

from raydap.adapter import Upstream, UpstreamError
from raydap.bridge.workers import meshes
from raydap.bridge.workers.records import BreakpointRecord
from raydap.bridge.workers.registry import Registry
from raydap.protocol.collectives import Identity, read_identity
from raydap.protocol.extension import COLLECTIVES

log = logging.getLogger(__name__)

#: How long one worker may take to answer; its first call sites take longer (torch
#: symbolizes stacks by importing torch._inductor, about 2 s, once per process).
READ_TIMEOUT = 5.0
#: Ranks that left kept at most (the oldest go first): a verdict names a dead rank from these.
MAX_DEPARTED = 4096


@dataclass(frozen=True)
class Departed:
    """A rank whose live worker went away (its debug connection closed): who it was, where,
    and when (``time.time()``)."""

    record: BreakpointRecord
    identity: Identity
    at: float


class ProcessGroups:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._identities: dict[str, Identity] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        #: Ranks whose worker went away, by record id, until a worker says it is that rank of
        #: that world again.
        self.departed: dict[str, Departed] = {}

    def attach(self, rid: str, upstream: Upstream) -> None:
        """A live worker is held: listen for its groups, and ask once for those it made
        before the bridge came."""
        upstream.news.on_process_groups = lambda body: self.told(rid, body)
        task = asyncio.ensure_future(self._ask(rid, upstream))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def forget(self, rid: str) -> None:
        """The worker went away: a rank of a world is kept as departed (call before its record
        is removed)."""
        identity = self._identities.pop(rid, None)
        record = self.registry.get(rid)
        if identity is None or record is None:
            return
        self.departed[rid] = Departed(record, identity, time.time())
        while len(self.departed) > MAX_DEPARTED:
            del self.departed[next(iter(self.departed))]

    def of(self, rid: str) -> Identity | None:
        return self._identities.get(rid)

    def identified(self) -> dict[str, Identity]:
        return dict(self._identities)

    async def _ask(self, rid: str, upstream: Upstream) -> None:
        try:
            response = await upstream.request(
                COLLECTIVES, {"recorder": False}, timeout=READ_TIMEOUT
            )
        except UpstreamError as exc:
            log.debug("%s: cannot ask its process groups: %s", rid, exc)
            return
        if response.success:
            self.told(rid, response.body)

    def told(self, rid: str, body: Any) -> None:
        """A worker said who it is (an event, or the identity in a recorder's answer)."""
        said = read_identity(body)
        record = self.registry.get(rid)
        if said is None or said.identity is None or record is None:
            return
        found = self._identities[rid] = said.identity
        job = record.job_id or said.job
        for gone, left in list(self.departed.items()):  # that rank is back (a restart)
            if (left.record.job_id, left.identity.world, left.identity.rank) == (
                job,
                found.world,
                found.rank,
            ):
                del self.departed[gone]
        update: dict[str, Any] = {
            "rank": found.rank, "world_size": found.world_size, "mesh": meshes.places(found),
        }  # fmt: skip
        if record.job_id is None and said.job is not None:
            # A worker that made a group runs its job's code, even if Ray never listed its
            # task (a rank that finished at once is idle before the bridge names it).
            update["job_id"] = said.job
        if any(getattr(record, k) != v for k, v in update.items()):
            self.registry.put(record.model_copy(update=update))

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
