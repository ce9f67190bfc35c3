"""The bridge on a real Ray head: what a person debugging a Ray job sees and does."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from raydap.bridge.client.dap_client import DapClient
from tests.conftest import Connect
from tests.e2e.conftest import BridgeProcess, Job, break_line, stop_job
from tests.waiting import until, wait_until

pytestmark = pytest.mark.e2e


async def stopped_frame(client: DapClient) -> tuple[dict, dict]:  # type: ignore[type-arg]
    """The next stop's event body and its top frame."""
    stopped = (await client.wait_event("stopped", timeout=60)).body
    trace = await client.request("stackTrace", {"threadId": stopped["threadId"]})
    return stopped, trace.body["stackFrames"][0]


async def evaluate(client: DapClient, frame: dict, expression: str) -> str:  # type: ignore[type-arg]
    response = await client.request(
        "evaluate", {"expression": expression, "frameId": frame["id"], "context": "repl"}
    )
    return str(response.body["result"])


def raydap(bridge: BridgeProcess, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, RAYDAP_URL=bridge.url)
    return subprocess.run(
        [sys.executable, "-m", "raydap.bridge", *args],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip


@pytest.mark.every_python
async def test_task_breakpoint_is_listed_attached_inspected_and_continued(
    bridge: BridgeProcess, run_job: Callable[[str], Job], dap_connect: Connect
) -> None:
    job = run_job("task_breakpoint.py")
    [record] = bridge.wait_records(job.job_id)
    assert record["kind"] == "breakpoint"
    assert record["task_name"] == "square"
    assert record["location"]["path"].endswith("task_breakpoint.py")
    assert record["location"]["line"] == break_line("task_breakpoint.py", "square")
    assert record["location"]["function"] == "square"
    assert record["node_ip"] and record["pid"] and record["worker_id"].startswith(record["id"])

    listing = raydap(bridge, "list")
    assert listing.returncode == 0, listing.stderr
    row = next(line for line in listing.stdout.splitlines() if line.startswith(record["id"]))
    assert "square" in row and f"task_breakpoint.py:{record['location']['line']}" in row

    client = await dap_connect(bridge.dap_host, bridge.dap_port)
    await client.attach(breakpoint=record["id"][:6])  # a unique prefix is enough
    stopped, frame = await stopped_frame(client)
    assert stopped["reason"] == "breakpoint"
    assert (frame["name"], frame["line"]) == ("square", record["location"]["line"])
    assert await evaluate(client, frame, "x, y") == "(7, 49)"
    assert bridge.get(f"/api/v1/breakpoints/{record['id']}")["clients"] == 1

    await client.request("next", {"threadId": stopped["threadId"]})  # on every Python:
    _, frame = await stopped_frame(client)  # the user's next line, not Ray's hook
    assert (frame["name"], frame["line"]) == ("square", record["location"]["line"] + 1)
    await client.request("continue", {"threadId": stopped["threadId"]})
    assert job.result() == "49"
    await until(lambda: bridge.records(job.job_id) == [], what="the finished worker unlisted")


@pytest.mark.every_python
async def test_successive_breakpoints_in_an_actor_reach_one_session(
    bridge: BridgeProcess, run_job: Callable[[str], Job], dap_connect: Connect
) -> None:
    job = run_job("actor_steps.py")
    [record] = bridge.wait_records(job.job_id)
    assert (record["task_name"], record["actor_class"]) == ("Counter.step", "Counter")
    assert record["actor_id"]

    client = await dap_connect(bridge.dap_host, bridge.dap_port)
    await client.attach(breakpoint=record["id"])
    stopped, frame = await stopped_frame(client)
    assert await evaluate(client, frame, "self.count") == "2"
    await client.request("continue", {"threadId": stopped["threadId"]})

    stopped, frame = await stopped_frame(client)  # the next call's breakpoint, no reattach
    assert frame["name"] == "step"
    assert await evaluate(client, frame, "self.count") == "5"
    assert bridge.records(job.job_id)[0]["id"] == record["id"]  # same worker, same id
    await client.request("continue", {"threadId": stopped["threadId"]})
    assert job.result() == "2 5"


async def shows_post_mortem_stop(
    client: DapClient,
    record: dict,
    script: str,
    batch: int,  # type: ignore[type-arg]
) -> dict:  # type: ignore[type-arg]
    """Attached to the post-mortem pause of ``script``'s ``load(batch)``: the stop names the
    exception, is listed and shown at the raising line, and that frame's ``batch`` reads back
    (on every Python). Returns the ``stopped`` event's body."""
    raised_at = break_line(script, "load")
    assert (record["location"]["function"], record["location"]["line"]) == ("load", raised_at)
    await client.attach(breakpoint=record["id"])
    stopped = (await client.wait_event("stopped", timeout=60)).body
    assert (stopped["reason"], stopped["text"]) == ("exception", "ValueError")
    trace = await client.request("stackTrace", {"threadId": stopped["threadId"]})
    top = trace.body["stackFrames"][0]
    assert (top["name"], top["line"]) == ("load", raised_at)
    assert await evaluate(client, top, "batch") == str(batch)
    return dict(stopped)


def bridge_captured_failure(bridge: BridgeProcess, job_id: str) -> list[dict[str, Any]]:
    """The job's post-mortem captures, once there is one."""

    def found() -> list[dict[str, Any]] | None:
        captures = bridge.get(f"/api/v1/captures?job={job_id}&kind=exception")["captures"]
        return list(captures) or None

    return wait_until(found, timeout=30, what=f"a post-mortem capture of {job_id}")


@pytest.mark.every_python
async def test_post_mortem_pause_shows_the_exception(
    bridge: BridgeProcess, run_job: Callable[[str], Job], dap_connect: Connect
) -> None:
    job = run_job("post_mortem.py")
    [record] = bridge.wait_records(job.job_id)
    assert record["kind"] == "exception"
    assert record["exception"]["type"] == "ValueError"
    assert "bad batch 3" in record["exception"]["message"]
    assert record["task_name"] == "load"

    [capture] = bridge_captured_failure(bridge, job.job_id)  # taken as soon as it was held
    assert (capture["function"], capture["exception"]) == ("load", "ValueError: bad batch 3")
    whole = bridge.get(f"/api/v1/captures/{capture['id']}")
    assert {v["name"]: v["value"] for v in whole["frames"][0]["locals"]} == {"batch": "3"}

    client = await dap_connect(bridge.dap_host, bridge.dap_port)
    stopped = await shows_post_mortem_stop(client, record, "post_mortem.py", 3)
    info = await client.request("exceptionInfo", {"threadId": stopped["threadId"]})
    assert "bad batch 3" in info.body["description"]
    assert info.body["exceptionId"] == info.body["details"]["typeName"] == "ValueError"
    process = (await client.wait_event("process")).body
    assert process["name"] == f"load (pid {record['pid']} on {record['node_ip']})"
    assert process["isLocalProcess"] is False
    await client.request("continue", {"threadId": stopped["threadId"]})
    assert job.result() == "raised ValueError"


@pytest.mark.every_python
async def test_an_error_raised_after_a_stop_reaches_the_caller_as_itself(
    bridge: BridgeProcess, run_job: Callable[[str], Job]
) -> None:
    job = run_job("raises_after_a_stop.py")
    [record] = bridge.wait_records(job.job_id)
    bridge.post(f"/api/v1/breakpoints/{record['id']}/continue")
    assert job.result() == "raised ValueError bad shard 2"


async def test_clients_share_a_worker_and_a_late_one_sees_the_same_stop(
    bridge: BridgeProcess, run_job: Callable[[str], Job], dap_connect: Connect
) -> None:
    job = run_job("task_breakpoint.py")
    [record] = bridge.wait_records(job.job_id)
    editor = await dap_connect(bridge.dap_host, bridge.dap_port)
    terminal = await dap_connect(bridge.dap_host, bridge.dap_port)
    await editor.attach(breakpoint=record["id"])
    await terminal.attach(breakpoint=record["id"])
    stopped, frame = await stopped_frame(editor)
    assert (await stopped_frame(terminal))[1]["line"] == frame["line"]
    assert bridge.get(f"/api/v1/breakpoints/{record['id']}")["clients"] == 2

    await editor.close()  # disconnect: the worker stays paused and held
    await terminal.close()
    [still] = await until(
        lambda: [r for r in bridge.records(job.job_id) if r["clients"] == 0],
        what="the bridge noticed its clients left",
    )
    assert (still["state"], still["clients"]) == ("paused", 0)
    assert job.process.poll() is None

    late = await dap_connect(bridge.dap_host, bridge.dap_port)
    watcher = await dap_connect(bridge.dap_host, bridge.dap_port)
    await late.attach(breakpoint=record["id"])
    await watcher.attach(breakpoint=record["id"])
    stopped, frame = await stopped_frame(late)
    assert await evaluate(late, frame, "y") == "49"
    await stopped_frame(watcher)
    await late.request("continue", {"threadId": stopped["threadId"]})
    assert (await watcher.wait_event("continued")).body["threadId"] == stopped["threadId"]
    assert job.result() == "49"


async def test_unknown_ids_get_clear_errors_and_http_continue_resumes(
    bridge: BridgeProcess, run_job: Callable[[str], Job], dap_connect: Connect
) -> None:
    status, body = bridge.http_error("GET", "/api/v1/breakpoints/feedface")
    assert status == 404 and "raydap list" in body["error"]
    status, body = bridge.http_error("POST", "/api/v1/continue", b'{"filter": {"jobs": 1}}')
    assert status == 400 and "filter.jobs" in body["error"]

    client = await dap_connect(bridge.dap_host, bridge.dap_port)
    await client.request("initialize", {"adapterID": "test"})
    missing = await client.request(
        "attach", {"breakpoint": "feedface", "token": bridge.token}, check=False
    )
    assert not missing.success and "raydap list" in (missing.message or "")
    bad_filter = await client.request(
        "attach", {"follow": {"rank": 0}, "token": bridge.token}, check=False
    )
    assert not bad_filter.success and "job, task (a glob), actor and node" in (
        bad_filter.message or ""
    )

    job = run_job("task_breakpoint.py")
    [record] = bridge.wait_records(job.job_id)
    assert bridge.post(f"/api/v1/breakpoints/{record['id']}/continue") == {
        "continued": [record["id"]]
    }
    assert job.result() == "49"


async def test_cli_evaluates_and_continues_a_group(
    bridge: BridgeProcess, run_job: Callable[[str], Job]
) -> None:
    job = run_job("task_breakpoint.py")
    [record] = bridge.wait_records(job.job_id)
    evaluated = raydap(bridge, "eval", "y + 1", "--job", job.job_id)
    assert evaluated.returncode == 0, evaluated.stderr
    assert f"{record['id']}  50" in evaluated.stdout
    listed = raydap(bridge, "list", "--json")
    assert record["id"] in listed.stdout
    continued = raydap(bridge, "continue", "--all", "--job", job.job_id)
    assert continued.returncode == 0 and record["id"] in continued.stdout
    assert job.result() == "49"
    usage = raydap(bridge, "continue")
    assert usage.returncode == 2 and "--all" in usage.stderr


async def test_worker_killed_while_attached_ends_its_session_only(
    bridge: BridgeProcess, run_job: Callable[[str], Job], dap_connect: Connect
) -> None:
    doomed_job = run_job("task_breakpoint.py")
    [doomed] = bridge.wait_records(doomed_job.job_id)
    other_job = run_job("actor_steps.py")
    [other] = bridge.wait_records(other_job.job_id)

    victim = await dap_connect(bridge.dap_host, bridge.dap_port)
    await victim.attach(breakpoint=doomed["id"])
    await victim.wait_event("stopped", timeout=60)
    bystander = await dap_connect(bridge.dap_host, bridge.dap_port)
    await bystander.attach(breakpoint=other["id"])
    stopped, frame = await stopped_frame(bystander)

    os.kill(doomed["pid"], signal.SIGKILL)
    await victim.wait_event("terminated", timeout=30)
    farewell = (await victim.wait_event("output")).body["output"]
    assert f"square (pid {doomed['pid']}" in farewell and "exited" in farewell
    await until(
        lambda: bridge.records(doomed_job.job_id) == [], every=0.1, what="the dead worker unlisted"
    )

    assert await evaluate(bystander, frame, "self.count") == "2"  # unaffected
    await bystander.request("continue", {"threadId": stopped["threadId"]})
    stopped, _ = await stopped_frame(bystander)
    await bystander.request("continue", {"threadId": stopped["threadId"]})
    assert other_job.result() == "2 5"


@pytest.mark.every_python
async def test_legacy_pdb_breakpoints_are_listed_with_how_to_reach_them(
    bridge: BridgeProcess, run_job: Callable[[str], Job], dap_connect: Connect
) -> None:
    job = run_job("legacy_pdb.py")
    [record] = bridge.wait_records(job.job_id, where=lambda r: r["kind"] == "legacy-pdb")
    assert record["id"].startswith("pdb-")
    assert record["task_name"] == "old_style"
    assert record["location"]["line"] == break_line("legacy_pdb.py", "legacy")
    assert record["location"]["path"].endswith("legacy_pdb.py")

    client = await dap_connect(bridge.dap_host, bridge.dap_port)
    await client.request("initialize", {"adapterID": "test"})
    refused = await client.request(
        "attach", {"breakpoint": record["id"], "token": bridge.token}, check=False
    )
    assert not refused.success and "ray debug" in (refused.message or "")

    # Release it the legacy way: pdb's own socket, then the listing forgets it.
    _, writer = await asyncio.open_connection("127.0.0.1", record["debugger_port"])
    writer.write(b"c\n")
    await writer.drain()
    assert job.result() == "2"
    writer.close()
    await until(lambda: bridge.records(job.job_id) == [], every=0.2, what="the worker unlisted")


async def test_the_terminal_debugger_reads_commands_from_a_pipe_and_q_leaves_the_worker_paused(
    bridge: BridgeProcess, run_job: Callable[[str], Job]
) -> None:
    """Scripts pipe commands in (no terminal, no readline); pdb's answers come out."""
    job = run_job("task_breakpoint.py")
    [record] = bridge.wait_records(job.job_id)
    session = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "raydap.bridge", "attach", record["id"][:6]],
        input="p x, y\nx * 2\nundefined_name\nq\n", capture_output=True, text=True, timeout=60,
        env=dict(os.environ, RAYDAP_URL=bridge.url, RAYDAP_HISTORY=os.devnull),
    )  # fmt: skip
    out = session.stdout
    assert session.returncode == 0, out + session.stderr
    where = f"> {record['location']['path']}({record['location']['line']})square()"
    assert where in out
    answers = [line.split(") ", 1)[-1] for line in out.splitlines()]
    assert "(7, 49)" in answers and "14" in answers  # p, and an expression echoed
    assert "*** NameError: name 'undefined_name' is not defined" in answers
    [left] = await until(
        lambda: [r for r in bridge.records(job.job_id) if r["clients"] == 0],
        what="the bridge noticed its clients left",
    )
    assert left["state"] == "paused"  # q leaves it paused
    bridge.post(f"/api/v1/breakpoints/{record['id']}/continue")
    assert job.result() == "49"


async def test_a_session_ends_when_its_task_returns_and_an_actors_session_when_the_job_ends(
    bridge: BridgeProcess, run_job: Callable[[str], Job], dap_connect: Connect
) -> None:
    """Ray keeps a worker alive after its task returns: the session must not just show a
    running thread forever."""
    job = run_job("returns_then_waits.py")
    records = {r["task_name"]: r for r in bridge.wait_records(job.job_id, count=2)}
    sessions = {}
    for name in ("square", "Counter.step"):
        sessions[name] = await dap_connect(bridge.dap_host, bridge.dap_port)
        await sessions[name].attach(breakpoint=records[name]["id"])
        stopped = (await sessions[name].wait_event("stopped", timeout=60)).body
        await sessions[name].request("continue", {"threadId": stopped["threadId"]})
    assert job.process.stdout is not None
    assert job.process.stdout.readline().strip() == "RESULT [49, 3]"

    task_session, actor_session = sessions["square"], sessions["Counter.step"]
    await task_session.wait_event("terminated", timeout=30)
    said = "".join(e.body["output"] for e in task_session.events if e.event == "output")
    assert "task square finished; nothing more stops in this session" in said
    returned = await actor_session.wait_event(
        "output", where=lambda e: "Counter.step finished" in e.body["output"], timeout=30
    )
    assert "the actor lives on" in returned.body["output"]
    assert not any(e.event == "terminated" for e in actor_session.events)

    stop_job(job)  # the job ends: its actor exits, and so does the session
    await actor_session.wait_event("terminated", timeout=60)
