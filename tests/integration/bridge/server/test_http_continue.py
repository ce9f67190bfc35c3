"""``POST /api/v1/breakpoints/{id}/continue`` on a real held debugpy: each failure says what
it is (a worker that is running is a conflict, not a missing worker), by its status and by
the ``kind`` of the one error type raised below the doors."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest
from aiohttp.test_utils import TestClient, TestServer

from raydap.adapter import State, bridge_capabilities
from raydap.bridge.cluster.dashboard import WorkerRow
from raydap.bridge.cluster.discovery import PausedWorker
from raydap.bridge.server.audit import AuditLog
from raydap.bridge.server.auth import Authenticator
from raydap.bridge.server.browser import BrowserGuard
from raydap.bridge.server.http_api import Services, make_app
from raydap.bridge.server.limits import ConnectionLimiter
from raydap.bridge.server.metrics import Metrics
from raydap.bridge.service import Workers
from raydap.bridge.workers.holder import Holder, record_id
from raydap.bridge.workers.registry import Registry
from tests.integration.conftest import start_debuggee
from tests.waiting import until

WORKER_ID = "cd" * 28


@pytest.fixture
async def api() -> AsyncIterator[tuple[TestClient, Holder]]:  # type: ignore[type-arg]
    debuggee = start_debuggee(linger=60)  # lives on, running, after its two stops
    holder = Holder(Registry(), detach_grace=120)
    row = WorkerRow(worker_id=WORKER_ID, ip="127.0.0.1", pid=debuggee.process.pid,
                    debugger_port=debuggee.port, num_paused_threads=1)  # fmt: skip
    holder.hold(PausedWorker(row, time.time()))
    services = Services(
        workers=Workers(holder),
        status=lambda: {"status": "ok"},
        capabilities=lambda: bridge_capabilities(None),
        auth=Authenticator([]),
        audit=AuditLog(None),
        limiter=ConnectionLimiter(),
        metrics=Metrics(holder.registry, clients=lambda: 0),
    )
    guard = BrowserGuard("127.0.0.1", allowed_hosts=[], allowed_origins=[])
    client = TestClient(TestServer(make_app(services, guard)))
    await client.start_server()
    yield client, holder
    await client.close()
    await holder.close()
    debuggee.stop()


async def test_continue_answers_each_case_with_its_own_status(
    api: tuple[TestClient, Holder],  # type: ignore[type-arg]
) -> None:
    client, holder = api
    rid, upstream = await holder.held_worker(record_id(WORKER_ID))
    url = f"/api/v1/breakpoints/{rid}/continue"
    for _ in range(2):  # both breakpoints of the debuggee
        await until(lambda: upstream.state is State.STOPPED, what="the debuggee stopped again")
        answer = await client.post(url, json={})
        assert answer.status == 200, await answer.text()
        assert (await answer.json())["continued"] == [rid]

    answer = await client.post(url, json={})
    assert answer.status == 409
    assert (await answer.json()) == {"error": f"worker {rid} is already running",
                                     "kind": "not_paused"}  # fmt: skip
    missing = await client.post("/api/v1/breakpoints/ffffffff/continue", json={})
    assert missing.status == 404
    assert "no paused worker" in (await missing.json())["error"]
    assert (await missing.json())["kind"] == "not_found"
    record = await client.get("/api/v1/breakpoints/ffffffff")
    assert record.status == 404 and (await record.json())["kind"] == "not_found"
    # What this bridge does not offer is said alike at every door (MCP says "unavailable" too).
    for off in (
        await client.get("/api/v1/hangs"),
        await client.post(f"/api/v1/workers/{rid}/pause", json={}),
        await client.post("/mcp", json={}),  # a bridge made without its MCP door
    ):
        assert off.status == 503 and (await off.json())["kind"] == "unavailable"
