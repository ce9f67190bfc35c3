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
from tests.waiting import until


async def test_a_thousand_running_workers_cost_the_dashboard_per_round_requests() -> None:
    registry = Registry()
    asked: list[str] = []
    answer = asyncio.Event()  # a round's questions stay open until the test answers them

    async def task_state(task_id: str) -> str:
        asked.append(task_id)
        await answer.wait()
        return "RUNNING"

    watch = TaskEndWatch(registry, task_state, every=0.01, per_round=20)
    upstreams: dict[str, Any] = {}
    for i in range(1000):
        rid = f"w{i}"
        record = BreakpointRecord(id=rid, node_ip="10.0.0.1", paused_since=time.time())
        registry.put(record.model_copy(update={"task_id": f"t{i}"}))
        upstreams[rid] = SimpleNamespace(state=State.RUNNING, clients={"session"})
        watch.update(rid, upstreams[rid])
    for rounds in range(1, 6):
        await until(lambda: len(asked) >= 20 * rounds)  # noqa: B023 (awaited at once)
        assert len(asked) == 20 * rounds  # one round's share while it is answered, no more
        answer.set()
        answer = asyncio.Event()
    assert len(set(asked)) == len(asked)  # round-robin: nobody asked twice before the rest

    for upstream in upstreams.values():
        upstream.state = State.STOPPED  # all paused again: nothing left to ask about
    answer.set()
    asked_before = len(asked)
    await until(lambda: watch.watching == 0, timeout=30)
    assert len(asked) == asked_before
    await watch.close()
