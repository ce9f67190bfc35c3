"""A hung job on a Ray head with Ray's defaults (the dashboard's profiling endpoints off):
every rank's stack at once, merged, and a waiting rank paused from outside, with no
``breakpoint()`` anywhere in its code."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from raydap.bridge.client.local_ray import LocalRay
from raydap.bridge.cluster.dashboard import DashboardClient
from raydap.bridge.cluster.driver import RayDriver
from raydap.bridge.cluster.remote_stacks import RemoteStacks, Target
from tests.conftest import Connect
from tests.e2e.conftest import BridgeProcess, Job, break_line, gdb_refusal, require_ptrace
from tests.waiting import wait_until


def nodes(tree: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for child in tree["children"]:
        yield child
        yield from nodes(child)


def wait_for_stacks(bridge: BridgeProcess, job_id: str, count: int) -> dict[str, Any]:
    """The job's merged stacks once every rank stands where it will stay: ``count - 1`` in
    ``wait_for_peers``, one in ``compute`` (a rank that Ray starts late on a loaded machine
    may still be on its way there: once, it was read before it reached ``compute``)."""

    def merged() -> dict[str, Any] | None:
        answer = bridge.get(f"/api/v1/stacks?job={job_id}")
        if len(answer["workers"]) == count and not answer["failed"]:
            functions = [n["function"] for n in nodes(answer["tree"])]
            waiting = [n for n in nodes(answer["tree"]) if n["function"] == "wait_for_peers"]
            if waiting and len(waiting[0]["workers"]) == count - 1 and "compute" in functions:
                return answer
        return None

    return wait_until(merged, timeout=60, every=0.3, what=f"stacks of {count} ranks of {job_id}")


@pytest.mark.every_python
async def test_every_ranks_stack_merged_then_a_waiting_rank_paused_from_outside(
    bridge: BridgeProcess, run_job: Callable[[str], Job], dap_connect: Connect
) -> None:
    require_ptrace()
    job = run_job("hung_ranks.py")
    answer = wait_for_stacks(bridge, job.job_id, 3)

    [waiting] = [n for n in nodes(answer["tree"]) if n["function"] == "wait_for_peers"]
    [computing] = [n for n in nodes(answer["tree"]) if n["function"] == "compute"]
    assert waiting["path"].endswith("hung_ranks.py")
    assert waiting["line"] == break_line("hung_ranks.py", "wait")
    compute_line = break_line("hung_ranks.py", "compute")
    assert computing["line"] in (compute_line - 1, compute_line)  # the loop, sampled
    assert len(computing["workers"]) == 1 and not set(computing["workers"]) & set(
        waiting["workers"]
    )
    ranks = {w["id"]: w for w in answer["workers"]}
    assert set(ranks) == {*waiting["workers"], *computing["workers"]}
    assert all(w["state"] == "running" and w["task_name"] == "rank" for w in ranks.values())

    printed = subprocess.run(
        [sys.executable, "-m", "raydap.bridge", "stacks", "--job", job.job_id],
        capture_output=True, text=True, timeout=60, env=dict(os.environ, RAYDAP_URL=bridge.url),
    ).stdout  # fmt: skip
    assert printed.startswith("3 workers")
    [line] = [x for x in printed.splitlines() if "wait_for_peers" in x]
    assert "[2: " in line and f"hung_ranks.py:{waiting['line']}" in line

    # Pause one waiting rank from outside, then look at its waiting frame.
    rank_id = waiting["workers"][0]
    refusal = gdb_refusal()
    if refusal is not None:
        # This machine's gdb would break the rank (gdb 13 on an AMX CPU): refused, said, and
        # the rank waits on untouched where it was.
        said = "gdb cannot call into a process"
        status, answer = bridge.post_any(f"/api/v1/workers/{rank_id}/pause")
        if status == 202:  # the node's task took over the 5 s a pause answers in: logged then
            wait_until(lambda: said in bridge.log.read_text(), timeout=60, what="the refusal")
        else:
            assert status == 502 and said in answer["error"], answer
        again = wait_for_stacks(bridge, job.job_id, 3)
        [still] = [n for n in nodes(again["tree"]) if n["function"] == "wait_for_peers"]
        assert rank_id in still["workers"]
        return
    answer = bridge.post(f"/api/v1/workers/{rank_id}/pause")
    if answer.get("pending"):  # the injection took over the 5 s a pause may take to answer
        assert answer["id"] == rank_id and answer["reason"]
        [paused] = bridge.wait_records(job.job_id, where=lambda r: r["id"] == rank_id
                                       and r["state"] == "paused" and r["location"])  # fmt: skip
    else:
        paused = answer["paused"]
    assert paused["id"] == rank_id and paused["state"] == "paused"
    client = await dap_connect(bridge.dap_host, bridge.dap_port)
    await client.attach(breakpoint=rank_id, token=bridge.token)
    stopped = await client.wait_event("stopped", timeout=30)
    trace = await client.request("stackTrace", {"threadId": stopped.body["threadId"]})
    [frame] = [f for f in trace.body["stackFrames"] if f["name"] == "wait_for_peers"]
    value = await client.request(
        "evaluate", {"expression": "waiting_rank", "frameId": frame["id"], "context": "repl"}
    )
    assert value.body["result"] in ("0", "1")
    await client.request("continue", {"threadId": stopped.body["threadId"]})
    await client.close()

    # Running (waiting) again: read with py-spy again, back in the group.
    wait_for_stacks(bridge, job.job_id, 3)


def test_pausing_what_is_not_running_says_so(bridge: BridgeProcess) -> None:
    status, answer = bridge.http_error("POST", "/api/v1/workers/ffffffffffff/pause", b"{}")
    assert status == 404 and "raydap stacks" in answer["error"]


@pytest.fixture
def remote_stacks(ray_head: LocalRay) -> Iterator[RemoteStacks]:
    dashboard = DashboardClient(ray_head.dashboard_url)
    driver = RayDriver(ray_head.address)
    yield RemoteStacks(dashboard, driver, timeout=10)


async def test_a_worker_that_exited_before_it_was_read_lands_in_failed(
    ray_head: LocalRay, remote_stacks: RemoteStacks
) -> None:
    require_ptrace()
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    node_id = await _head_node(ray_head)
    try:
        outcome = await remote_stacks.read({"w1": Target(node_id, gone.pid)})
    finally:
        await remote_stacks.driver.close()
        await remote_stacks.dashboard.close()
    assert isinstance(outcome["w1"], str) and outcome["w1"]  # why, in py-spy's words


async def _head_node(ray_head: LocalRay) -> str:
    import aiohttp

    url = ray_head.dashboard_url + "/api/v0/nodes"
    async with aiohttp.ClientSession() as session, session.get(url) as answer:
        rows = (await answer.json())["data"]["result"]["result"]
    return str(rows[0]["node_id"])
