"""50 clients sending 1,000 requests each, across several workers: nothing lost or misrouted.

A test of correctness (timings are the benchmarks' business). The workers are the simulated
debugpys of bench/fake_cluster.py, each of which answers ``evaluate`` with its own rank, so a
response that reached the wrong client or came from the wrong worker shows.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from raydap.bridge.client.dap_client import DapClient
from tests.e2e.conftest import BridgeProcess, start_bridge, stop_bridge

ROOT = Path(__file__).resolve().parents[4]
WORKERS, CLIENTS, REQUESTS, WINDOW = 4, 50, 1000, 50


@pytest.fixture
def busy_bridge(tmp_path: Path) -> Iterator[BridgeProcess]:
    cluster = subprocess.Popen(
        [sys.executable, "-m", "bench.fake_cluster", "--workers", str(WORKERS)],
        stdout=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    assert cluster.stdout is not None
    url = cluster.stdout.readline().split()[1]
    limits = ["--max-connections-per-address", str(CLIENTS + 10)]
    bridge = start_bridge(["--dashboard-url", url, *limits], tmp_path / "bridge.log")
    try:
        bridge.wait_records("01000000", count=WORKERS)
        yield bridge
    finally:
        stop_bridge(bridge)
        cluster.kill()
        cluster.wait()


async def one_client(bridge: BridgeProcess, rank: int) -> int:
    client = await DapClient.connect(bridge.dap_host, bridge.dap_port, token=bridge.token)
    await client.attach(breakpoint=f"{rank:012x}")
    thread_id = (await client.wait_event("stopped")).body["threadId"]
    frame = (await client.request("stackTrace", {"threadId": thread_id})).body["stackFrames"][0]
    checked = 0
    for start in range(0, REQUESTS, WINDOW):
        sent = []
        for i in range(start, start + WINDOW):
            command, arguments = [
                ("threads", None),
                ("stackTrace", {"threadId": thread_id, "levels": 1}),
                ("scopes", {"frameId": frame["id"]}),
                ("evaluate", {"expression": f"rank + {i}", "frameId": frame["id"]}),
            ][i % 4]
            sent.append((command, client.send_nowait(command, arguments)))
        for command, pending in sent:
            response = await asyncio.wait_for(pending, 60)
            assert response.success and response.command == command
            if command == "evaluate":
                assert response.body["result"] == str(rank)  # from this client's worker
            checked += 1
    await client.close()
    return checked


async def test_fifty_clients_thousand_requests_each_nothing_lost_or_misrouted(
    busy_bridge: BridgeProcess,
) -> None:
    answered = await asyncio.gather(*(one_client(busy_bridge, c % WORKERS) for c in range(CLIENTS)))
    assert answered == [REQUESTS] * CLIENTS
