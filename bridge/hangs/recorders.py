"""One rank's Flight Recorders, read over the debug connection the bridge holds.

A live worker answers ``raydapCollectives`` with who it is and the tail of each of torch's
recorders (:mod:`raydap.live.collectives`); the identity in the answer goes to the workers'
one owner of it (:class:`~raydap.bridge.workers.process_groups.ProcessGroups`).
"""

from __future__ import annotations

import json
from typing import Any

from raydap.adapter import Upstream, UpstreamError
from raydap.bridge.hangs.desync import RankDump
from raydap.bridge.workers.process_groups import READ_TIMEOUT, ProcessGroups
from raydap.protocol.collectives import read_reply
from raydap.protocol.extension import COLLECTIVES

#: How long a worker may take to give its call sites: its first take longer (torch symbolizes
#: stacks by importing torch._inductor, about 2 s, once per process).
FRAMES_TIMEOUT = 30.0
#: Entries of each recorder read: a verdict needs the last few dozen (ranks of a hung job
#: stand within a few collectives of each other).
TAIL = 32


async def read_recorders(
    groups: ProcessGroups,
    rid: str,
    upstream: Upstream | None,
    *,
    frames: bool = False,
    status: bool = False,
) -> list[RankDump] | str:
    """One worker's recorders (one dump a backend) with who it is, or why they could not be
    read; ``status``: only how far each of its groups got (no entries)."""
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
    if reply.identity is None:
        return reply.reason or "it has no torch.distributed process group"
    groups.told(rid, {"identity": reply.identity.model_dump(), "job": reply.job})
    recorders = reply.by_backend()
    if not recorders:
        return reply.reason or "its Flight Recorder is off"
    return [
        RankDump(rid, reply.identity, recorder, backend) for backend, recorder in recorders.items()
    ]
