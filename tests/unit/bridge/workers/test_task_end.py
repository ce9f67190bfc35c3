"""The task-end watch asks the dashboard about a bounded number of workers each round.
(Stand-ins for the upstreams: only their state and clients are read here; the end of a real
task is tested on a real Ray head in tests/e2e/test_bridge.py.)"""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any

from raydap.adapter import State
from raydap.bridge.workers.records import BreakpointRecord
from raydap.bridge.workers.registry import Registry
from raydap.bridge.workers.task_end import TaskEndWatch


async def test_a_thousand_running_workers_cost_the_dashboard_per_round_requests() -> None:
    registry = Registry()
    asked: list[str] = []

    async def task_state(task_id: str) -> str:
        asked.append(task_id)
        return "RUNNING"

    watch = TaskEndWatch(registry, task_state, every=0.05, per_round=20)
    upstreams: dict[str, Any] = {}
    for i in range(1000):
        rid = f"w{i}"
        record = BreakpointRecord(id=rid, node_ip="10.0.0.1", paused_since=time.time())
        registry.put(record.model_copy(update={"task_id": f"t{i}"}))
        upstreams[rid] = SimpleNamespace(state=State.RUNNING, clients={"session"})
        watch.update(rid, upstreams[rid])
    await asyncio.sleep(0.33)  # about six rounds
    assert 20 <= len(asked) <= 7 * 20
    assert len(set(asked)) == len(asked)  # round-robin: nobody asked twice before the rest

    for upstream in upstreams.values():
        upstream.state = State.STOPPED  # all paused again: nothing left to ask about
    await asyncio.sleep(0.2)
    before = len(asked)
    await asyncio.sleep(0.2)
    assert len(asked) == before
    await watch.close()
