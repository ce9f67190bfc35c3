"""Which way running workers' stacks are read: the dashboard where its profiling answers, else
a task on each node. The dashboard and the node tasks are stand-ins here (the real ones are
driven by tests/e2e/test_stacks_and_pause.py on a Ray head with Ray's defaults)."""

from __future__ import annotations

import json
from typing import Any

from raydap.bridge.cluster.dashboard import DashboardError, ProfilingDisabled
from raydap.bridge.cluster.remote_stacks import RemoteStacks, Target

TEXT = 'Thread 7 (idle): "MainThread"\n    wait (job.py:3)\n'
JSON = json.dumps([{"thread_name": "MainThread", "os_thread_id": 7,
                    "frames": [{"name": "wait", "filename": "/job.py", "line": 3}]}])  # fmt: skip


class Dashboard:
    def __init__(self, answer: str | Exception) -> None:
        self.answer = answer
        self.asked = 0

    async def traceback(self, pid: int, node_id: str) -> str:
        self.asked += 1
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


class Nodes:
    def __init__(self) -> None:
        self.asked: list[str] = []
        self.flags: list[tuple[str, ...]] = []

    async def run_on_node(self, node_id: str, function: Any, *args: Any, timeout: float) -> Any:
        self.asked.append(node_id)
        pids, _, flags, variables = args
        self.flags.append(flags)
        return {pid: {"json": JSON, "env": environment(pid, variables)} for pid in pids}


def environment(pid: int, variables: tuple[str, ...]) -> dict[str, Any]:
    return {"RANK": str(pid), "EVIL": 7} if "RANK" in variables else {}


def reader(dashboard: Dashboard, nodes: Nodes) -> RemoteStacks:
    return RemoteStacks(dashboard, nodes, timeout=5)  # type: ignore[arg-type]


TARGETS = {"w1": Target("n1", 7), "w2": Target("n2", 8)}


async def test_with_profiling_off_each_node_is_asked_once_and_the_dashboard_not_again() -> None:
    dashboard, nodes = Dashboard(ProfilingDisabled("Profiling is disabled")), Nodes()
    stacks = reader(dashboard, nodes)
    first = await stacks.read(TARGETS)
    await stacks.read(TARGETS)
    assert sorted(nodes.asked) == ["n1", "n1", "n2", "n2"] and dashboard.asked == 1
    assert [f.path for f in first["w1"].threads[0].frames] == ["/job.py"]  # type: ignore[index,union-attr]


async def test_with_profiling_on_the_dashboard_answers() -> None:
    dashboard, nodes = Dashboard(TEXT), Nodes()
    outcome = await reader(dashboard, nodes).read(TARGETS)
    assert dashboard.asked == 2 and nodes.asked == []
    assert outcome["w2"].threads[0].frames[0].function == "wait"  # type: ignore[index,union-attr]


async def test_a_dashboard_that_cannot_read_the_first_worker_is_not_relied_on() -> None:
    dashboard, nodes = Dashboard(DashboardError("py-spy is not installed")), Nodes()
    outcome = await reader(dashboard, nodes).read(TARGETS)
    assert sorted(nodes.asked) == ["n1", "n2"] and not isinstance(outcome["w1"], str)


async def test_locals_are_read_on_the_nodes_even_where_the_dashboard_answers() -> None:
    """The dashboard's dump has no locals; the nodes also read the environment (not EVIL)."""
    dashboard, nodes = Dashboard(TEXT), Nodes()
    outcome = await reader(dashboard, nodes).read(TARGETS, ("--locals",), ("RANK",))
    assert dashboard.asked == 0 and nodes.flags == [("--locals",), ("--locals",)]
    assert outcome["w2"].environment == {"RANK": "8"}  # type: ignore[union-attr]


async def test_where_the_dashboard_answers_a_rank_s_environment_is_not_read() -> None:
    """Asking for the environment alone does not give up the dashboard (scale): no ranks."""
    dashboard, nodes = Dashboard(TEXT), Nodes()
    outcome = await reader(dashboard, nodes).read(TARGETS, (), ("RANK",))
    assert dashboard.asked == 2 and nodes.asked == []
    assert outcome["w1"].environment == {}  # type: ignore[union-attr]
