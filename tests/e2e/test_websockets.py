"""DAP over WebSocket and the events feed, against the real bridge and a real Ray job."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from urllib.parse import quote

import aiohttp
import pytest

from tests.conftest import Connect
from tests.e2e.conftest import BridgeProcess, Job
from tests.e2e.test_bridge import evaluate, stopped_frame

pytestmark = pytest.mark.e2e


def ws(bridge: BridgeProcess, path: str) -> str:
    return bridge.url.replace("http://", "ws://") + path


async def test_dap_over_websocket_with_a_preselected_worker(
    bridge: BridgeProcess, run_job: Callable[[str], Job], dap_connect: Connect
) -> None:
    job = run_job("task_breakpoint.py")
    [record] = bridge.wait_records(job.job_id)
    client = await dap_connect(ws(bridge, f"/dap?breakpoint={record['id'][:8]}"))
    await client.attach()  # the query names the worker
    stopped, frame = await stopped_frame(client)
    assert frame["name"] == "square"
    assert await evaluate(client, frame, "y") == "49"
    await client.request("continue", {"threadId": stopped["threadId"]})
    assert job.result() == "49"


async def test_follow_over_websocket_and_the_events_feed(
    bridge: BridgeProcess, run_job: Callable[[str], Job], dap_connect: Connect
) -> None:
    async with (
        aiohttp.ClientSession() as http,
        http.ws_connect(ws(bridge, "/api/v1/events"), headers=bridge.auth) as feed,
    ):
        snapshot = await feed.receive_json(timeout=10)
        assert snapshot["kind"] == "snapshot" and isinstance(snapshot["records"], list)
        job = run_job("task_breakpoint.py")
        seen: list[tuple[str, str]] = []
        while ("updated", "paused") not in seen:
            change = await feed.receive_json(timeout=60)
            if "record" in change and change["record"]["job_id"] in (None, job.job_id):
                seen.append((change["kind"], change["record"]["state"]))
        assert seen[0] == ("added", "connecting")

        follow = quote(json.dumps({"job": job.job_id}))
        client = await dap_connect(ws(bridge, f"/dap?follow={follow}"))
        await client.attach()
        stopped, frame = await stopped_frame(client)
        assert await evaluate(client, frame, "x") == "7"
        await client.request("continue", {"threadId": stopped["threadId"]})
        assert job.result() == "49"
        await client.close()
        while True:  # once nobody watches the worker, it is detached and leaves the list
            change = await feed.receive_json(timeout=30)
            if change["kind"] == "removed" and change["record"]["job_id"] == job.job_id:
                break


async def test_bad_websocket_frames_close_only_their_connection(
    bridge: BridgeProcess, run_job: Callable[[str], Job], dap_connect: Connect
) -> None:
    job = run_job("task_breakpoint.py")
    [record] = bridge.wait_records(job.job_id)
    good = await dap_connect(ws(bridge, "/dap"))
    await good.attach(breakpoint=record["id"])
    stopped, frame = await stopped_frame(good)

    async with aiohttp.ClientSession() as http:
        for bad in (b"\x00\x01", "not json", json.dumps({"seq": 1, "type": "request"})):
            async with http.ws_connect(ws(bridge, "/dap"), headers=bridge.auth) as socket:
                if isinstance(bad, bytes):
                    await socket.send_bytes(bad)
                else:
                    await socket.send_str(bad)
                closing = await socket.receive(timeout=10)
                while closing.type == aiohttp.WSMsgType.TEXT:  # an error response first
                    closing = await socket.receive(timeout=10)
                assert closing.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)

    assert await evaluate(good, frame, "y") == "49"  # unaffected
    await good.request("continue", {"threadId": stopped["threadId"]})
    assert job.result() == "49"
    await asyncio.sleep(0)
