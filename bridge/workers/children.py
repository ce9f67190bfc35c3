"""The records of child processes of held workers (see docs/children.md).

A child waits for a client on its parent's debugpy adapter; the holder holds it like a live
worker and lets it go with its parent. What it is called comes from its parent, here.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Mapping
from typing import Any

from raydap.adapter import Upstream
from raydap.bridge.workers.records import BreakpointRecord
from raydap.bridge.workers.registry import Registry

#: How long a child waits for its parent's job to be known (Ray lists a task about a second
#: after it starts).
NAME_CHILD_WITHIN = 30.0


def child_record_id(parent: BreakpointRecord, pid: int) -> str:
    """A child process's id: as short as a worker's, and not a prefix-mate of its parent's
    (``raydap attach <parent prefix>`` must still name the parent alone). A pid is unique
    among a worker's children while they run; a grandchild is its child's child."""
    return hashlib.sha256(f"{parent.worker_id or parent.id}/{pid}".encode()).hexdigest()[:12]


def child_record(parent: BreakpointRecord, pid: int) -> BreakpointRecord:
    """A new child's record: on its parent's node and debug port, in its parent's job, live
    (it runs on once held)."""
    return BreakpointRecord(
        id=child_record_id(parent, pid),
        node_id=parent.node_id,
        node_ip=parent.node_ip,
        pid=pid,
        worker_type=parent.worker_type,
        debugger_port=parent.debugger_port,
        paused_since=time.time(),
        live=True,
        working_dir=parent.working_dir,
        job_id=parent.job_id,
        task_name=f"{parent.task_name} child" if parent.task_name else None,
        parent=parent.id,
    )


def children_of(registry: Registry, parent_id: str) -> list[BreakpointRecord]:
    return [r for r in registry.records() if r.parent == parent_id]


async def name_after_parent(
    registry: Registry, upstreams: Mapping[str, Upstream], parent_id: str, child_id: str
) -> None:
    """Give a child its parent's job (and a name, until it names itself at a stop) once the
    parent has them; follow sessions of the job then show it."""
    deadline = time.monotonic() + NAME_CHILD_WITHIN
    while time.monotonic() < deadline:
        await asyncio.sleep(0.1)
        parent, child = registry.get(parent_id), registry.get(child_id)
        if parent is None or child is None:
            return
        if parent.job_id is not None:
            update: dict[str, Any] = {"job_id": parent.job_id}
            if child.task_name is None and parent.task_name:
                update["task_name"] = f"{parent.task_name} child"
            named = child.model_copy(update=update)
            registry.put(named)
            if (upstream := upstreams.get(child_id)) is not None:
                upstream.name = named.label  # what clients' messages call it
            return
