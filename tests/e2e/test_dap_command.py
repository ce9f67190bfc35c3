"""``raydap dap``: a debug adapter on stdin/stdout, as an editor (or ``ssh head raydap dap``)
starts it, relaying to the bridge on a real Ray head."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.e2e.conftest import BridgeProcess, Job, StartAdapter, break_line
from tests.e2e.test_bridge import evaluate, stopped_frame

pytestmark = pytest.mark.e2e


async def test_an_editor_debugs_a_worker_through_raydap_dap_with_no_token_to_paste(
    bridge: BridgeProcess, run_job: Callable[[str], Job], dap_command: StartAdapter
) -> None:
    job = run_job("task_breakpoint.py")
    [record] = bridge.wait_records(job.job_id)
    client = await dap_command(bridge, "--breakpoint", record["id"])
    assert client.token is None  # the adapter adds the bridge's token
    await client.attach()
    stopped, frame = await stopped_frame(client)
    assert frame["line"] == break_line("task_breakpoint.py", "square")
    assert await evaluate(client, frame, "y") == "49"
    await client.request("continue", {"threadId": stopped["threadId"]})
    assert job.result() == "49"
    await client.wait_event("terminated", timeout=30)


async def test_raydap_dap_follows_a_job_named_on_its_command_line(
    bridge: BridgeProcess, run_job: Callable[[str], Job], dap_command: StartAdapter
) -> None:
    job = run_job("four_ranks.py")
    client = await dap_command(bridge, "--follow", f"job={job.job_id}")
    await client.attach()
    stops = [(await client.wait_event("stopped", timeout=60)).body for _ in range(4)]
    threads = (await client.request("threads")).body["threads"]
    assert {t["id"] for t in threads} == {s["threadId"] for s in stops}
    await client.request("raydapContinueAll")
    assert job.result() == "[0, 10, 20, 30]"


async def test_without_a_bridge_the_editor_is_told_why(
    bridge: BridgeProcess, dap_command: StartAdapter
) -> None:
    client = await dap_command(bridge, env={"RAYDAP_URL": "http://127.0.0.1:9"})
    answer = await client.request("initialize", {"adapterID": "ray"}, check=False)
    assert not answer.success
    assert "no raydap bridge at http://127.0.0.1:9" in (answer.message or "")
    await client.wait_event("terminated", timeout=10)
