"""Faults the bridge survives, each on a real Ray head."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from raydap.bridge.client.dap_client import DapClient
from raydap.bridge.client.local_ray import LocalRay
from raydap.bridge.client.ports import free_port
from tests.conftest import Connect
from tests.e2e.conftest import BridgeProcess, Job, start_bridge, start_job, stop_bridge, stop_job
from tests.e2e.test_bridge import evaluate, stopped_frame
from tests.e2e.test_demo_and_outages import start_proxy
from tests.waiting import until

pytestmark = pytest.mark.e2e

SLOW_CLIENT = """
import asyncio, sys
from raydap.bridge.client.dap_client import DapClient

async def main():
    client = await DapClient.connect(sys.argv[1], int(sys.argv[2]), token=sys.argv[4])
    await client.attach(breakpoint=sys.argv[3])
    stopped = await client.wait_event("stopped")
    trace = await client.request("stackTrace", {"threadId": stopped.body["threadId"]})
    frame = trace.body["stackFrames"][0]["id"]
    client.send_nowait("evaluate", {"expression": "__import__('time').sleep(3)", "frameId": frame,
                                    "context": "repl"})
    print("asked", flush=True)
    await asyncio.sleep(60)

asyncio.run(main())
"""


async def test_a_client_killed_mid_request_leaves_its_worker_held(
    bridge: BridgeProcess, run_job: Callable[[str], Job], dap_connect: Connect
) -> None:
    job = run_job("task_breakpoint.py")
    [record] = bridge.wait_records(job.job_id)
    doomed = subprocess.Popen(
        [sys.executable, "-c", SLOW_CLIENT, bridge.dap_host, str(bridge.dap_port), record["id"],
         str(bridge.token)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert doomed.stdout is not None and doomed.stdout.readline().strip() == "asked"
    doomed.send_signal(signal.SIGKILL)
    doomed.wait()
    [still] = await until(
        lambda: [r for r in bridge.records(job.job_id) if r["clients"] == 0],
        what="the bridge noticed its clients left",
    )
    assert still["state"] == "paused" and still["clients"] == 0

    client = await dap_connect(bridge.dap_host, bridge.dap_port)
    await client.attach(breakpoint=record["id"])
    stopped, frame = await stopped_frame(client)
    assert await evaluate(client, frame, "y") == "49"  # answered once the sleep is over
    await client.request("continue", {"threadId": stopped["threadId"]})
    assert job.result() == "49"


async def healthz(bridge: BridgeProcess, status: str) -> bool:
    """Whether the bridge's health says ``status`` (``ok``, ``degraded``), as a person sees it."""
    return bool((await asyncio.to_thread(bridge.get, "/healthz"))["status"] == status)


@pytest.fixture(scope="module")
def quiet_head() -> Iterator[LocalRay]:
    """A Ray head of this module's own (the shared one's workers belong to the shared bridge)."""
    with LocalRay(num_cpus=2) as head:
        yield head


async def test_a_30_second_dashboard_outage_spares_sessions_in_progress(
    quiet_head: LocalRay, dap_connect: Connect, tmp_path: Path
) -> None:
    port = free_port()
    proxy = await start_proxy(port, quiet_head.dashboard_url)
    bridge = start_bridge(["--dashboard-url", f"http://127.0.0.1:{port}"], tmp_path / "b.log")
    jobs: list[Job] = []
    try:
        jobs.append(await asyncio.to_thread(start_job, quiet_head.address, "task_breakpoint.py"))
        [first] = await asyncio.to_thread(bridge.wait_records, jobs[0].job_id)
        client = await dap_connect(bridge.dap_host, bridge.dap_port)
        await client.attach(breakpoint=first["id"])
        stopped, frame = await stopped_frame(client)

        await proxy.cleanup()  # the dashboard goes away
        outage_ends = time.monotonic() + 30
        await until(lambda: healthz(bridge, "degraded"), timeout=30, every=0.2)
        while time.monotonic() < outage_ends:  # debugging goes on meanwhile
            assert await evaluate(client, frame, "x * 2") == "14"
            await asyncio.sleep(5)

        proxy = await start_proxy(port, quiet_head.dashboard_url)
        await until(lambda: healthz(bridge, "ok"), timeout=30, every=0.2)
        jobs.append(await asyncio.to_thread(start_job, quiet_head.address, "actor_steps.py"))
        [second] = await asyncio.to_thread(bridge.wait_records, jobs[1].job_id)  # found again
        assert second["task_name"] == "Counter.step"

        await client.request("continue", {"threadId": stopped["threadId"]})
        assert await asyncio.to_thread(jobs[0].result) == "49"
    finally:
        for job in jobs:
            stop_job(job)
        await proxy.cleanup()
        stop_bridge(bridge)


@pytest.fixture
def impatient_bridge(quiet_head: LocalRay, tmp_path: Path) -> Iterator[BridgeProcess]:
    """A bridge on the private head that gives up on a worker's answer after 2 s."""
    bridge = start_bridge(
        ["--address", quiet_head.address, "--request-timeout", "2"], tmp_path / "bridge.log"
    )
    yield bridge
    stop_bridge(bridge)


@pytest.fixture
def roomy_bridge(quiet_head: LocalRay, tmp_path: Path) -> Iterator[BridgeProcess]:
    """A bridge on the private head that admits 60 connections from one address."""
    args = ["--address", quiet_head.address, "--max-connections-per-address", "60"]
    bridge = start_bridge(args, tmp_path / "bridge.log")
    yield bridge
    stop_bridge(bridge)


async def test_a_worker_that_stops_answering_fails_requests_not_sessions(
    quiet_head: LocalRay, impatient_bridge: BridgeProcess, dap_connect: Connect
) -> None:
    job = await asyncio.to_thread(start_job, quiet_head.address, "task_breakpoint.py")
    try:
        [record] = await asyncio.to_thread(impatient_bridge.wait_records, job.job_id)
        client = await dap_connect(impatient_bridge.dap_host, impatient_bridge.dap_port)
        await client.attach(breakpoint=record["id"])
        stopped, frame = await stopped_frame(client)
        os.kill(record["pid"], signal.SIGSTOP)
        try:
            frozen = await client.request(
                "evaluate", {"expression": "y", "frameId": frame["id"], "context": "repl"},
                check=False, timeout=20,
            )  # fmt: skip
            assert not frozen.success and "did not answer 'evaluate' within 2 s" in str(
                frozen.message
            )
            trace = await client.request("stackTrace", {"threadId": stopped["threadId"]})
            assert trace.body["stackFrames"][0]["name"] == "square"  # what it knew, it tells
        finally:
            os.kill(record["pid"], signal.SIGCONT)
        assert await evaluate(client, frame, "y") == "49"  # the session lived on
        await client.request("continue", {"threadId": stopped["threadId"]})
        assert await asyncio.to_thread(job.result) == "49"
    finally:
        stop_job(job)


async def test_fifty_clients_on_four_ray_workers_lose_and_misroute_nothing(
    quiet_head: LocalRay, roomy_bridge: BridgeProcess
) -> None:
    """Correctness under load (its timing is bench/'s business): 50 clients, 1,000 requests
    each, spread over four paused actor ranks; one request in 50 is an evaluate that only the
    client's own rank answers the way it does."""
    job = await asyncio.to_thread(start_job, quiet_head.address, "four_ranks.py")
    try:
        records = await asyncio.to_thread(roomy_bridge.wait_records, job.job_id, 4)
        where = (roomy_bridge.dap_host, roomy_bridge.dap_port)
        clients = [await DapClient.connect(*where, token=roomy_bridge.token) for _ in range(50)]

        async def hammer(client: DapClient, record: dict[str, object]) -> int:
            await client.attach(breakpoint=record["id"])
            stopped, frame = await stopped_frame(client)
            rank = await evaluate(client, frame, "self.rank")
            answered = 0
            for start in range(0, 1000, 50):
                batch = []
                for i in range(start, start + 50):
                    command, arguments = (
                        ("evaluate", {"expression": f"self.rank * 1000 + {i}",
                                      "frameId": frame["id"], "context": "watch"})
                        if i % 50 == 0 else
                        [("threads", None), ("stackTrace", {"threadId": stopped["threadId"]}),
                         ("scopes", {"frameId": frame["id"]})][i % 3]
                    )  # fmt: skip
                    batch.append((command, i, client.send_nowait(command, arguments)))
                for command, i, pending in batch:
                    response = await asyncio.wait_for(pending, 120)
                    assert response.success and response.command == command
                    if command == "evaluate":
                        assert response.body["result"] == str(int(rank) * 1000 + i)
                    answered += 1
            await client.close()
            return answered

        answered = await asyncio.gather(
            *(hammer(client, records[n % 4]) for n, client in enumerate(clients))
        )
        assert answered == [1000] * 50
        assert roomy_bridge.post("/api/v1/continue", {"filter": {"job": job.job_id}})
        assert await asyncio.to_thread(job.result) == "[0, 10, 20, 30]"
    finally:
        stop_job(job)
