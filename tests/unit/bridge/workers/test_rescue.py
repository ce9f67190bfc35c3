"""What a rescue tells the person when reopening a listener inside the worker fails (the real
rescue, with gdb in a real worker, is tests/e2e/test_unreachable.py). The driver is a stand-in:
what it stands for is a Ray task on the worker's node."""

from __future__ import annotations

import time
from typing import Any

from raydap.bridge.workers.records import BreakpointRecord
from raydap.bridge.workers.registry import Registry
from raydap.bridge.workers.rescue import Rescuer
from tests.waiting import until


class OnNode:
    """Answers the rescue as ``on_node.rescue_in_place`` would on a node without gdb."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.calls: list[tuple[str, Any]] = []

    async def run_on_node(self, node_id: str, function: Any, *args: Any, timeout: float) -> str:
        self.calls.append((node_id, function.__name__))
        return self.answer


def refused(port: int = 4000) -> BreakpointRecord:
    return BreakpointRecord(
        id="w1", node_ip="10.0.0.5", node_id="n1", pid=42, worker_id="f" * 56,
        debugger_port=port, paused_since=time.time(), state="failed", error="refuses",
    )  # fmt: skip


async def test_a_rescue_that_cannot_inject_says_why_in_the_record() -> None:
    registry = Registry()
    registry.put(refused())
    node = OnNode("gdb is not installed on this node (apt-get install gdb; ...)")
    rescuer = Rescuer(registry, node)  # type: ignore[arg-type]
    assert rescuer.rescue(refused())
    await until(lambda: "failed: gdb" in (registry.get("w1").error or ""), what="why")  # type: ignore[union-attr]
    record = registry.get("w1")
    assert record is not None and record.state == "failed"
    assert "refuses connections" in (record.error or "")
    assert "restart the worker or its job" in (record.error or "")
    assert node.calls == [("n1", "rescue_in_place")]


async def test_each_worker_is_rescued_once_per_port() -> None:
    registry = Registry()
    registry.put(refused())
    node = OnNode("")
    rescuer = Rescuer(registry, node)  # type: ignore[arg-type]
    assert rescuer.rescue(refused())
    assert not rescuer.rescue(refused())  # discovery's next try, same dead port
    await until(lambda: registry.get("w1").error == "rescued: holding it again", what="told")  # type: ignore[union-attr]
    assert rescuer.rescue(refused(port=4001))  # the reopened listener died too
    await rescuer.close()
