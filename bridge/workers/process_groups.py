"""Which torch.distributed rank each live worker is, and its Flight Recorder, read on demand.

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
import json
import logging
from typing import Any

from raydap.adapter import Upstream, UpstreamError
from raydap.bridge.workers.desync import RankDump
from raydap.bridge.workers.recorder import Identity, read_identity, read_reply
from raydap.bridge.workers.registry import Registry
from raydap.protocol.extension import COLLECTIVES

log = logging.getLogger(__name__)

#: How long one worker may take to answer; its first call sites take longer (torch
#: symbolizes stacks by importing torch._inductor, about 2 s, once per process).
READ_TIMEOUT = 5.0
FRAMES_TIMEOUT = 30.0
#: Entries of each recorder read: a verdict needs the last few dozen (ranks of a hung job
#: stand within a few collectives of each other).
TAIL = 32


class ProcessGroups:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._identities: dict[str, Identity] = {}
        self._tasks: set[asyncio.Task[Any]] = set()

    def attach(self, rid: str, upstream: Upstream) -> None:
        """A live worker is held: listen for its groups, and ask once for those it made
        before the bridge came."""
        upstream.on_process_groups = lambda body: self._told(rid, body)
        task = asyncio.ensure_future(self._ask(rid, upstream))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def forget(self, rid: str) -> None:
        self._identities.pop(rid, None)

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
            self._told(rid, response.body)

    def _told(self, rid: str, body: Any) -> None:
        said = read_identity(body)
        record = self.registry.get(rid)
        if said is None or said.identity is None or record is None:
            return
        found = self._identities[rid] = said.identity
        update: dict[str, Any] = {"rank": found.rank, "world_size": found.world_size}
        if record.job_id is None and said.job is not None:
            # A worker that made a group runs its job's code, even if Ray never listed its
            # task (a rank that finished at once is idle before the bridge names it).
            update["job_id"] = said.job
        if any(getattr(record, k) != v for k, v in update.items()):
            self.registry.put(record.model_copy(update=update))

    async def read(
        self, rid: str, upstream: Upstream | None, *, frames: bool = False, status: bool = False
    ) -> list[RankDump] | str:
        """One worker's recorders (one dump a backend) with who it is, or why they could not
        be read; ``status``: only how far each of its groups got (no entries)."""
        if upstream is None:
            return "the worker is gone"
        arguments: dict[str, Any] = (
            {"status": True} if status else {"recorder": True, "tail": TAIL, "frames": frames}
        )
        try:
            response = await upstream.request(
                COLLECTIVES, arguments, timeout=FRAMES_TIMEOUT if frames else READ_TIMEOUT
            )
        except UpstreamError as exc:
            return str(exc)
        if not response.success:
            return f"it did not answer: {response.message} (is it a raydap.live worker?)"
        reply = read_reply(response.body, len(json.dumps(response.body)))
        if isinstance(reply, str):
            return reply
        if reply.identity is not None:
            self._told(rid, {"identity": reply.identity.model_dump(), "job": reply.job})
        if reply.identity is None:
            return reply.reason or "it has no torch.distributed process group"
        recorders = reply.by_backend()
        if not recorders:
            return reply.reason or "its Flight Recorder is off"
        return [
            RankDump(rid, reply.identity, recorder, backend)
            for backend, recorder in recorders.items()
        ]

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
