"""Follow sessions and group control on a real Ray head: one session for a whole job."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from raydap.protocol import CONTINUE_ALL
from tests.conftest import Connect
from tests.e2e.conftest import JOBS, BridgeProcess, Job, break_line
from tests.e2e.test_bridge import evaluate, stopped_frame
from tests.waiting import until

pytestmark = pytest.mark.e2e


@pytest.mark.every_python
async def test_one_session_sees_four_ranks_and_the_group_is_evaluated_and_continued(
    bridge: BridgeProcess, run_job: Callable[[str], Job], dap_connect: Connect
) -> None:
    job = run_job("four_ranks.py")
    bridge.wait_records(job.job_id, count=4)
    client = await dap_connect(bridge.dap_host, bridge.dap_port)
    await client.attach(follow={"job": job.job_id})

    stops = [(await client.wait_event("stopped", timeout=60)).body for _ in range(4)]
    assert len({s["threadId"] for s in stops}) == 4
    # Each rank was announced by a thread event before its stop.
    order = [(e.event, (e.body or {}).get("threadId")) for e in client.events]
    for stop in stops:
        assert order.index(("thread", stop["threadId"])) < order.index(
            ("stopped", stop["threadId"])
        )
    assert all(s["allThreadsStopped"] is False for s in stops)
    threads = (await client.request("threads")).body["threads"]
    assert sorted(t["id"] for t in threads) == sorted(s["threadId"] for s in stops)
    assert all(t["name"].startswith("Rank.step (pid ") for t in threads)
    ranks = set()
    for stop in stops:
        trace = await client.request("stackTrace", {"threadId": stop["threadId"]})
        frame = trace.body["stackFrames"][0]
        assert (frame["name"], frame["line"]) == ("step", break_line("four_ranks.py", "step"))
        ranks.add(await evaluate(client, frame, "self.rank"))
    assert ranks == {"0", "1", "2", "3"}

    where = {"job": job.job_id}
    answers = bridge.post("/api/v1/evaluate", {"expression": "loss", "filter": where})
    assert sorted(a["result"] for a in answers["results"]) == [
        "0.25",
        "0.3333333333333333",
        "0.5",
        "1.0",
    ]
    snapshot = [w for w in bridge.get("/api/v1/snapshot")["workers"] if "locals" in w]
    assert sum(1 for w in snapshot if w["stack"][0]["function"] == "step") >= 4

    # Continuing one rank's thread leaves the other three stopped, and the client is told so.
    first, *others = stops
    answer = await client.request("continue", {"threadId": first["threadId"]})
    assert answer.body["allThreadsContinued"] is False
    still = (await client.request("threads")).body["threads"]
    assert {t["id"] for t in still} >= {s["threadId"] for s in others}
    trace = await client.request("stackTrace", {"threadId": others[0]["threadId"]})
    assert await evaluate(client, trace.body["stackFrames"][0], "1 + 1") == "2"

    continued = bridge.post("/api/v1/continue", {"filter": where})["continued"]
    assert len(continued) == 3
    seen = {(await client.wait_event("continued")).body["threadId"] for _ in range(4)}
    assert seen == {s["threadId"] for s in stops}
    assert job.result() == "[0, 10, 20, 30]"
    await client.wait_event("terminated", timeout=30)  # following that job is over
    said = "".join(e.body["output"] for e in client.events if e.event == "output")
    assert f"job {job.job_id} has ended (succeeded)" in said


async def test_successive_breakpoints_stop_one_session_that_was_waiting_for_them(
    bridge: BridgeProcess, run_job: Callable[[str], Job], dap_connect: Connect
) -> None:
    client = await dap_connect(bridge.dap_host, bridge.dap_port)
    await client.attach(follow={"task": "accumulate"})  # before the job even starts
    job = run_job("three_stops.py")
    for expected_total in ("0", "1", "3"):
        stopped, frame = await stopped_frame(client)
        # (debugpy reports the breakpoint() line for the first stop, and the next line run
        # in the frame for later ones: a quirk of pydevd.settrace, not of the bridge.)
        assert frame["name"] == "accumulate"
        assert await evaluate(client, frame, "total") == expected_total
        if expected_total != "3":
            await client.request("continue", {"threadId": stopped["threadId"]})
    [record] = bridge.records(job.job_id)
    everything = await client.request(CONTINUE_ALL)
    assert everything.body == {"continued": [record["id"]]}
    assert job.result() == "3"


async def test_working_dir_paths_map_to_the_local_root_and_local_breakpoints_hit(
    bridge: BridgeProcess, run_job: Callable[[str], Job], dap_connect: Connect
) -> None:
    local_root = str(JOBS / "shipped")
    local_file = f"{local_root}/shipped.py"
    loop_line = break_line("shipped/shipped.py", "loop")
    job = run_job("working_dir.py")
    [record] = bridge.wait_records(job.job_id)
    assert "/working_dir_files/_ray_pkg_" in record["location"]["path"]  # the worker's path

    client = await dap_connect(bridge.dap_host, bridge.dap_port)

    async def set_local_breakpoint() -> None:
        answer = await client.request(
            "setBreakpoints", {"source": {"path": local_file}, "breakpoints": [{"line": loop_line}]}
        )
        assert answer.body["breakpoints"][0]["verified"] is False  # no worker joined yet

    await client.attach(
        follow={"job": job.job_id}, localRoot=local_root, configure=set_local_breakpoint
    )
    stopped, frame = await stopped_frame(client)
    assert frame["source"]["path"] == local_file
    assert frame["line"] == break_line("shipped/shipped.py", "first")

    # A second client without localRoot cannot open the worker's file: the bridge serves it.
    viewer = await dap_connect(bridge.dap_host, bridge.dap_port)
    await viewer.attach(follow={"job": job.job_id})
    _, remote_frame = await stopped_frame(viewer)
    assert "/_ray_pkg_" in remote_frame["source"]["path"]
    reference = remote_frame["source"]["sourceReference"]
    assert reference > 0
    text = await viewer.request(
        "source", {"source": remote_frame["source"], "sourceReference": reference}
    )
    assert text.body["content"] == (JOBS / "shipped" / "shipped.py").read_text()
    await viewer.close()

    await client.request("continue", {"threadId": stopped["threadId"]})
    stopped, frame = await stopped_frame(client)  # the breakpoint set on the local path
    assert stopped["reason"] == "breakpoint"
    assert (frame["source"]["path"], frame["line"]) == (local_file, loop_line)
    assert await evaluate(client, frame, "i") == "0"
    await client.request("setBreakpoints", {"source": {"path": local_file}, "breakpoints": []})
    await client.request("continue", {"threadId": stopped["threadId"]})
    assert job.result() == "3"


async def test_child_sessions_get_one_start_debugging_request_per_worker(
    bridge: BridgeProcess, run_job: Callable[[str], Job], dap_connect: Connect
) -> None:
    refused = await dap_connect(bridge.dap_host, bridge.dap_port)
    await refused.request("initialize", {"adapterID": "test"})
    answer = await refused.request(
        "attach", {"childSessions": True, "token": bridge.token}, check=False
    )
    assert not answer.success and "startDebugging" in (answer.message or "")

    job = run_job("task_breakpoint.py")
    [record] = bridge.wait_records(job.job_id)
    parent = await dap_connect(bridge.dap_host, bridge.dap_port)
    await parent.attach(
        follow={"job": job.job_id},
        childSessions=True,
        localRoot=str(JOBS),
        client_capabilities={"supportsStartDebuggingRequest": True},
    )
    await until(lambda: parent.reverse_requests, timeout=10, what="startDebugging")
    [start] = parent.reverse_requests
    assert start.command == "startDebugging"
    configuration = start.arguments["configuration"]
    assert start.arguments["request"] == "attach"
    assert configuration["breakpoint"] == record["id"]
    assert configuration["localRoot"] == str(JOBS)
    assert "square" in configuration["name"]

    child = await dap_connect(bridge.dap_host, bridge.dap_port)
    await child.attach(**{k: v for k, v in configuration.items() if k != "name"})
    stopped, frame = await stopped_frame(child)
    assert await evaluate(child, frame, "y") == "49"
    await child.request("continue", {"threadId": stopped["threadId"]})
    assert job.result() == "49"
