"""A bridge replaced while people debug (``raydap serve --replace``, SIGHUP): every paused
worker stays paused at the same stop, under the same id, on the same ports."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from raydap.bridge.client.dap_client import DapClient
from raydap.bridge.client.local_ray import LocalRay
from raydap.bridge.server import handover
from tests.conftest import Connect, runtime_dir
from tests.e2e.conftest import (
    JOBS,
    BridgeProcess,
    Job,
    StartAdapter,
    break_line,
    require_tools,
    start_bridge,
    start_job,
    stop_bridge,
    stop_job,
)
from tests.e2e.test_bridge import evaluate, stopped_frame
from tests.e2e.test_live import (
    LOOP,
    SCRIPT,
    captured,
    finish_every_rank,
    follow_with_conditional_breakpoint,
    rank0_meets_the_condition,
    running_ranks,
    wait_workers,
)
from tests.e2e.tmux import PROMPT, Terminal
from tests.waiting import until

pytestmark = pytest.mark.e2e

EXTENSION = Path(__file__).resolve().parents[2] / "vscode-ext"
#: The extension's debug adapter, compiled by ``npm test`` (``make ext-check``).
EXTENSION_ADAPTER = EXTENSION / "out" / "src" / "bridgeDebugAdapter.js"
RESUME_DRIVER = EXTENSION / "test" / "e2e" / "resume.cjs"


@pytest.fixture(scope="module")
def head() -> Iterator[LocalRay]:
    """A head of these tests' own: the session's bridge would hold their workers otherwise
    (debugpy takes one client)."""
    with LocalRay(num_cpus=4) as started:
        yield started


@pytest.fixture
def run_job(head: LocalRay) -> Iterator[Callable[[str], Job]]:
    jobs: list[Job] = []

    def run(script: str) -> Job:
        jobs.append(start_job(head.address, script))
        return jobs[-1]

    yield run
    for job in jobs:
        stop_job(job)


@pytest.fixture
def bridges(head: LocalRay, tmp_path: Path) -> Iterator[Callable[..., BridgeProcess]]:
    """Start bridges on that head, keeping captures in a directory of the test's own; each is
    stopped at the end."""
    started: list[BridgeProcess] = []
    captures = ["--captures", str(tmp_path / "captures")]

    def start(*args: str, log: str = "bridge.log") -> BridgeProcess:
        started.append(start_bridge(["--address", head.address, *captures, *args], tmp_path / log))
        return started[-1]

    yield start
    for bridge in started:
        if bridge.process.poll() is None:
            stop_bridge(bridge)


def paused(bridge: BridgeProcess, job: Job) -> dict[str, tuple[str, int]]:
    """Each paused worker of the job: its id, with the task and line it stands at."""
    return {
        r["id"]: (r["task_name"], r["location"]["line"])
        for r in bridge.records(job.job_id)
        if r["state"] == "paused" and r["location"]
    }


def three_paused(
    bridges: Callable[..., BridgeProcess], run_job: Callable[[str], Job]
) -> tuple[BridgeProcess, Job, dict[str, tuple[str, int]]]:
    """A bridge of its own holding the three paused workers of three_squares.py."""
    old = bridges(log="old.log")
    job = run_job("three_squares.py")
    old.wait_records(job.job_id, 3)
    return old, job, paused(old, job)


async def attached(dap_connect: Connect, bridge: BridgeProcess, rid: str) -> tuple[DapClient, dict]:  # type: ignore[type-arg]
    client = await dap_connect(bridge.dap_host, bridge.dap_port)
    await client.attach(breakpoint=rid)
    _, frame = await stopped_frame(client)
    return client, frame


async def test_a_replace_keeps_paused_workers_and_their_stops(
    bridges: Callable[..., BridgeProcess], run_job: Callable[[str], Job], dap_connect: Connect
) -> None:
    old, job, before = three_paused(bridges, run_job)
    line = break_line("three_squares.py", "square")
    assert set(before.values()) == {("square", line)}
    first = sorted(before)[0]
    client, frame = await attached(dap_connect, old, first)
    value = await evaluate(client, frame, "x, y")

    new = bridges("--replace", str(old.process.pid), log="new.log")
    assert (new.url, new.dap_port, new.token) == (old.url, old.dap_port, old.token)
    assert old.process.wait(timeout=30) == 0, old.log.read_text()[-3000:]
    await until(lambda: client.closed, what="the old bridge's DAP session closed")

    assert paused(new, job) == before, new.log.read_text()[-3000:]
    again, frame = await attached(dap_connect, new, first)
    assert (frame["name"], frame["line"]) == ("square", line)
    assert await evaluate(again, frame, "x, y") == value
    assert sorted(new.post("/api/v1/continue")["continued"]) == sorted(before)
    assert job.result() == "29"  # 4 + 9 + 16: every worker ran on from its own stop


async def test_raydap_dap_resumes_the_editors_session_on_the_new_bridge(
    bridges: Callable[..., BridgeProcess],
    run_job: Callable[[str], Job],
    dap_command: StartAdapter,
) -> None:
    old, job, before = three_paused(bridges, run_job)
    editor = await dap_command(old, "--follow", f"job={job.job_id}")
    after_the_stop = {"path": str(JOBS / "three_squares.py")}
    line = break_line("three_squares.py", "square") + 1  # return y

    async def configure() -> None:
        answer = await editor.request(
            "setBreakpoints", {"source": after_the_stop, "breakpoints": [{"line": line}]}
        )
        configured.extend(answer.body["breakpoints"])

    configured: list[dict] = []  # type: ignore[type-arg]
    await editor.attach(configure=configure)
    stops = [(await editor.wait_event("stopped", timeout=60)).body for _ in range(3)]
    thread = stops[0]["threadId"]
    [frame, *_] = (await editor.request("stackTrace", {"threadId": thread})).body["stackFrames"]
    [scope, *_] = (await editor.request("scopes", {"frameId": frame["id"]})).body["scopes"]
    local = await editor.request("variables", {"variablesReference": scope["variablesReference"]})
    value = await evaluate(editor, frame, "x, y")

    new = bridges("--replace", str(old.process.pid), log="new.log")
    assert old.process.wait(timeout=30) == 0, old.log.read_text()[-3000:]
    await editor.wait_event("output", where=lambda e: "reconnected" in e.body["output"])

    # The ids the editor holds are good on the new bridge: nothing to fetch again.
    assert await evaluate(editor, frame, "x, y") == value
    again = await editor.request("variables", {"variablesReference": scope["variablesReference"]})
    assert again.body == local.body
    threads = (await editor.request("threads")).body["threads"]
    assert {t["id"] for t in threads} == {s["threadId"] for s in stops}
    assert not [e for e in editor.events if e.event == "terminated"]
    replayed = [(await editor.wait_event("stopped", timeout=60)).body for _ in range(3)]
    assert {s["threadId"] for s in replayed} == {s["threadId"] for s in stops}

    # Its breakpoint, set before the replace, stops each worker again under the same id.
    await editor.request("raydapContinueAll")
    hits = [(await editor.wait_event("stopped", timeout=60)).body for _ in range(3)]
    assert {tuple(h["hitBreakpointIds"]) for h in hits} == {(configured[0]["id"],)}
    at_the_breakpoint = {rid: ("square", line) for rid in before}
    await until(lambda: paused(new, job) == at_the_breakpoint, what="the records at line 11")
    await editor.request("raydapContinueAll")
    assert job.result() == "29"


def test_a_pdb_in_the_terminal_goes_on_after_a_replace(
    bridges: Callable[..., BridgeProcess], run_job: Callable[[str], Job], tmp_path: Path
) -> None:
    require_tools(Path(shutil.which("tmux") or "tmux"))
    old, job, before = three_paused(bridges, run_job)
    first = sorted(before)[0]
    env = {"RAYDAP_URL": old.url, "RAYDAP_HISTORY": str(tmp_path / "history")}
    term = Terminal([sys.executable, "-m", "raydap.bridge", "attach", first[:6]], env)
    try:
        term.wait_for(lambda text: re.search(PROMPT + r"\s*$", text) is not None)
        value = term.command("p x, y")
        assert value in ("(2, 4)", "(3, 9)", "(4, 16)")

        bridges("--replace", str(old.process.pid), log="new.log")
        assert old.process.wait(timeout=30) == 0, old.log.read_text()[-3000:]
        again = term.command("p x, y", timeout=60).splitlines()
        assert again[-1] == value, again  # after the lines saying it went on
        assert any("reconnected" in line for line in again), again
        term.type("c")
        term.wait_for("EXITED 0", timeout=60)
    finally:
        term.close()
    continued = old.post("/api/v1/continue")["continued"]  # the same address: the new bridge
    assert sorted(continued) == sorted(set(before) - {first})
    assert job.result() == "29"


@pytest.mark.parametrize("transport", ["tcp", "websocket"])
async def test_the_vscode_extensions_adapter_resumes_its_session_on_the_new_bridge(
    bridges: Callable[..., BridgeProcess], run_job: Callable[[str], Job], transport: str
) -> None:
    require_tools(EXTENSION_ADAPTER, make="make ext-check")
    old, job, _ = three_paused(bridges, run_job)
    where = (
        f"{old.dap_host}:{old.dap_port}"
        if transport == "tcp"
        else f"{old.url}/dap".replace("http", "ws", 1)
    )
    editor = await asyncio.create_subprocess_exec(
        "node", str(RESUME_DRIVER), transport, where, old.token or "", job.job_id,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert editor.stdin is not None and editor.stdout is not None
    try:
        first = json.loads(await asyncio.wait_for(editor.stdout.readline(), 120) or b"null")
        assert first is not None, "the editor's adapter failed before the replace"
        bridges("--replace", str(old.process.pid), log="new.log")
        assert old.process.wait(timeout=30) == 0, old.log.read_text()[-3000:]
        editor.stdin.write(b"replaced\n")
        after = json.loads(await asyncio.wait_for(editor.stdout.readline(), 120) or b"null")
        assert after is not None, "the editor's adapter failed after the replace"
        assert after["value"] == first["value"]  # the frame id from before the replace
        assert sorted(after["threads"]) == sorted(after["replayed"]) == sorted(first["stops"])
        assert after["terminated"] == 0
        assert job.result() == "29"
        assert await asyncio.wait_for(editor.wait(), 30) == 0
    finally:
        if editor.returncode is None:
            editor.kill()
            await editor.wait()


async def test_sighup_hands_over_to_a_new_process_of_the_same_bridge(
    head: LocalRay, run_job: Callable[[str], Job], tmp_path: Path
) -> None:
    # As under systemd (Type=notify, NotifyAccess=all): the unit's main pid moves along.
    manager = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    manager.bind(str(tmp_path / "notify"))
    manager.settimeout(60)
    env = dict(os.environ, NOTIFY_SOCKET=str(tmp_path / "notify"))
    old = start_bridge(["--address", head.address], tmp_path / "bridge.log", env)
    new_pid = None
    try:
        assert manager.recv(4096) == b"READY=1\nSTATUS=serving"
        job = run_job("three_squares.py")
        old.wait_records(job.job_id, 3)
        before = paused(old, job)

        old.process.send_signal(signal.SIGHUP)
        assert old.process.wait(timeout=60) == 0, old.log.read_text()[-3000:]
        told = [manager.recv(4096).decode() for _ in range(2)]  # in either order
        moved = next(m for m in told if m.startswith("MAINPID="))
        new_pid = int(moved.split("\n")[0].removeprefix("MAINPID="))
        assert "READY=1\nSTATUS=serving" in told
        assert new_pid != old.process.pid and psutil.pid_exists(new_pid)
        # The same URL, ports and token: the old bridge's address reaches the new process.
        assert paused(old, job) == before
        assert sorted(old.post("/api/v1/continue")["continued"]) == sorted(before)
        assert job.result() == "29"
    finally:
        manager.close()
        if new_pid is not None:
            stop_pid(new_pid)
        if old.process.poll() is None:
            stop_bridge(old)


def stop_pid(pid: int) -> None:
    """Stop a bridge this test did not start itself (SIGHUP's replacement), by its pid."""
    process = psutil.Process(pid)
    process.terminate()
    process.wait(timeout=30)  # not its parent: no exit code, but a clean stop removes its file
    assert not (runtime_dir() / f"bridge-{pid}.json").exists()


async def test_a_replace_that_fails_half_way_leaves_the_old_bridge_serving(
    bridges: Callable[..., BridgeProcess], run_job: Callable[[str], Job], dap_connect: Connect
) -> None:
    old, job, before = three_paused(bridges, run_job)
    path = handover.socket_path(runtime_dir(), old.process.pid)
    received = await asyncio.to_thread(handover.take, path)  # a new bridge that got everything
    assert sorted(w.record.id for w in received.offer.workers) == sorted(before)
    status, answer = old.http_error("POST", "/api/v1/continue", b"{}")
    assert status == 503 and "being replaced" in answer["error"], answer
    received.close()  # and died before it served

    await until(
        lambda: "did not take over" in old.log.read_text(), what="the old bridge taking back"
    )
    assert old.process.poll() is None
    assert paused(old, job) == before
    _, frame = await attached(dap_connect, old, sorted(before)[0])
    assert frame["line"] == break_line("three_squares.py", "square")
    assert sorted(old.post("/api/v1/continue")["continued"]) == sorted(before)
    assert job.result() == "29"
    second = run_job("task_breakpoint.py")  # discovery runs again
    [record] = old.wait_records(second.job_id)
    old.post(f"/api/v1/breakpoints/{record['id']}/continue")
    assert second.result() == "49"


async def test_a_replace_during_a_follow_session_of_live_ranks_keeps_their_breakpoints(
    bridges: Callable[..., BridgeProcess], run_job: Callable[[str], Job], dap_connect: Connect
) -> None:
    old = bridges(log="old.log")
    job = run_job("live_ranks.py")
    ranks = await asyncio.to_thread(wait_workers, old, job.job_id, running_ranks)
    client = await follow_with_conditional_breakpoint(dap_connect, old, job, ranks)
    # A capture point over HTTP on the same line, and what it took before the replace.
    line = {"path": SCRIPT, "line": LOOP, "interval": 0.2, "most": 10_000}
    point = old.post("/api/v1/capture-points", line)
    taken = await asyncio.to_thread(captured, old, point["id"], 2)

    new = bridges("--replace", str(old.process.pid), log="new.log")
    assert old.process.wait(timeout=30) == 0, old.log.read_text()[-3000:]
    await until(lambda: client.closed, what="the old bridge's follow session closed")
    again = await asyncio.to_thread(wait_workers, new, job.job_id, running_ranks)
    assert [w["id"] for w in again] == [r["id"] for r in ranks]
    # The point and its captures came along; the ranks capture on into the new bridge (what
    # it read back from disk is all the old one kept), beside the breakpoint.
    assert point["id"] in {p["id"] for p in new.get("/api/v1/capture-points")["points"]}
    kept = new.get(f"/api/v1/captures?point={point['id']}")["captures"]
    assert {c["id"] for c in taken} <= {c["id"] for c in kept}
    after = await asyncio.to_thread(captured, new, point["id"], len(kept) + 2)
    assert {c["id"] for c in kept} < {c["id"] for c in after}

    # The editor's breakpoint is still in the ranks: rank 0 meets its condition and stops.
    await rank0_meets_the_condition(new, job, ranks)

    # The editor attaches again, clears its breakpoint, and the job is let finish.
    editor = await dap_connect(new.dap_host, new.dap_port)
    await editor.attach(follow={"job": job.job_id})
    await editor.wait_event("stopped", timeout=30)  # rank 0's stop, replayed
    await editor.request("setBreakpoints", {"source": {"path": SCRIPT}, "breakpoints": []})
    await finish_every_rank(new, job)


async def test_a_replace_keeps_the_hang_watchs_verdicts_and_the_jobs_asked_for(
    bridges: Callable[..., BridgeProcess], run_job: Callable[[str], Job]
) -> None:
    watch = ("--hang-after", "3", "--hang-sample-interval", "1")
    old = bridges(*watch, log="old.log")
    job = run_job("hung_ranks.py")
    old.post("/api/v1/hangs/watch", {"job": job.job_id})

    def verdict(bridge: BridgeProcess) -> dict | None:  # type: ignore[type-arg]
        jobs = bridge.get("/api/v1/hangs")["jobs"]
        return next((v for v in jobs if v["job"] == job.job_id), None)

    hung = await until(
        lambda: (v := verdict(old)) is not None and v["state"] == "suspected_hang" and v,
        timeout=60, what="a suspected hang",
    )  # fmt: skip
    new = bridges("--replace", str(old.process.pid), *watch, log="new.log")
    assert old.process.wait(timeout=30) == 0, old.log.read_text()[-3000:]
    # At once, and from the replaced bridge's memory: a bridge starting from nothing would
    # have no verdict yet, then call the job progressing for 3 s.
    after = verdict(new)
    assert after is not None and after["state"] == "suspected_hang", after
    assert after["since"] == hung["since"]
    assert [s["rank"] for s in after["stragglers"]] == [s["rank"] for s in hung["stragglers"]]
    # Still watched (asked for by hand; it has no live worker): a job no longer watched is
    # forgotten at the next sample, one a second. A check that nothing happens: 3 samples.
    for _ in range(6):
        await asyncio.sleep(0.5)
        assert verdict(new) is not None, new.log.read_text()[-2000:]


def test_a_second_bridge_without_replace_on_busy_ports_refuses_and_the_first_serves_on(
    bridges: Callable[..., BridgeProcess], head: LocalRay
) -> None:
    first = bridges()
    port = first.url.rsplit(":", 1)[1]
    second = subprocess.run(
        [sys.executable, "-m", "raydap.bridge", "serve", "--address", head.address,
         "--port", port, "--dap-port", str(first.dap_port)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert second.returncode == 2
    assert "cannot listen" in second.stderr and "in use" in second.stderr, second.stderr
    assert first.get("/healthz")["status"] in ("ok", "degraded")
    assert first.process.poll() is None
