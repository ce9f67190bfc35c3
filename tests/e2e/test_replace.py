"""A bridge replaced while people debug (``raydap serve --replace``, SIGHUP): every paused
worker stays paused at the same stop, under the same id, on the same ports."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from raydap.bridge.client.dap_client import DapClient
from raydap.bridge.client.local_ray import LocalRay
from raydap.bridge.server import connection_file, handover
from tests.conftest import Connect, runtime_dir
from tests.e2e.conftest import BridgeProcess, Job, break_line, start_bridge, stop_bridge
from tests.e2e.test_bridge import evaluate, stopped_frame
from tests.waiting import until

pytestmark = pytest.mark.e2e


@pytest.fixture
def bridges(ray_head: LocalRay, tmp_path: Path) -> Iterator[Callable[..., BridgeProcess]]:
    """Start bridges of their own (not the session's); each is stopped at the end."""
    started: list[BridgeProcess] = []

    def start(*args: str, log: str = "bridge.log") -> BridgeProcess:
        started.append(start_bridge(["--address", ray_head.address, *args], tmp_path / log))
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


async def attached(dap_connect: Connect, bridge: BridgeProcess, rid: str) -> tuple[DapClient, dict]:  # type: ignore[type-arg]
    client = await dap_connect(bridge.dap_host, bridge.dap_port)
    await client.attach(breakpoint=rid)
    _, frame = await stopped_frame(client)
    return client, frame


async def test_a_replace_keeps_paused_workers_and_their_stops(
    bridges: Callable[..., BridgeProcess], run_job: Callable[[str], Job], dap_connect: Connect
) -> None:
    old = bridges(log="old.log")
    job = run_job("three_squares.py")
    old.wait_records(job.job_id, 3)
    before = paused(old, job)
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


async def test_sighup_hands_over_to_a_new_process_of_the_same_bridge(
    bridges: Callable[..., BridgeProcess], run_job: Callable[[str], Job]
) -> None:
    old = bridges(log="old.log")
    job = run_job("three_squares.py")
    old.wait_records(job.job_id, 3)
    before = paused(old, job)

    old.process.send_signal(signal.SIGHUP)
    assert old.process.wait(timeout=60) == 0, old.log.read_text()[-3000:]
    [running] = [c for c in connection_file.live_connections(runtime_dir()) if c.url == old.url]
    assert running.pid != old.process.pid
    new = BridgeProcess(old.process, old.url, old.dap_host, old.dap_port, old.log, running.token)
    try:
        assert paused(new, job) == before
        assert sorted(new.post("/api/v1/continue")["continued"]) == sorted(before)
        assert job.result() == "29"
    finally:
        stop_pid(running.pid)


def stop_pid(pid: int) -> None:
    """Stop a bridge this test did not start itself (SIGHUP's replacement), by its pid."""
    process = psutil.Process(pid)
    process.terminate()
    process.wait(timeout=30)  # not its parent: no exit code, but a clean stop removes its file
    assert not (runtime_dir() / f"bridge-{pid}.json").exists()


async def test_a_replace_that_fails_half_way_leaves_the_old_bridge_serving(
    bridges: Callable[..., BridgeProcess], run_job: Callable[[str], Job], dap_connect: Connect
) -> None:
    old = bridges(log="old.log")
    job = run_job("three_squares.py")
    old.wait_records(job.job_id, 3)
    before = paused(old, job)
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
