"""The events WebSocket over a real socket: a client that falls behind is closed with a reason
and, reconnecting, gets a snapshot with everything it missed."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import WSMsgType, web
from aiohttp.test_utils import TestServer

from raydap.bridge.server.endpoints import FELL_BEHIND, serve_events
from raydap.bridge.service import Feeds
from raydap.bridge.workers.records import BreakpointRecord
from raydap.bridge.workers.registry import Registry


@pytest.fixture
async def feed() -> AsyncIterator[tuple[Registry, str]]:
    registry = Registry(max_queued_changes=3)

    async def events(request: web.Request) -> web.StreamResponse:
        return await serve_events(request, Feeds(registry, None, None))

    app = web.Application()
    app.router.add_get("/api/v1/events", events)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    yield registry, str(server.make_url("/api/v1/events"))
    await server.close()


async def test_a_client_that_falls_behind_is_closed_and_reloads_everything(
    feed: tuple[Registry, str],
) -> None:
    registry, url = feed
    async with aiohttp.ClientSession() as http:
        async with http.ws_connect(url) as socket:
            assert (await socket.receive_json(timeout=5)) == {"kind": "snapshot", "records": []}
            now = time.time()
            for i in range(10):  # faster than the feed can send: it falls behind
                registry.put(BreakpointRecord(id=f"r{i}", node_ip="10.0.0.7", paused_since=now))
            closed = await socket.receive(timeout=5)
            while closed.type is WSMsgType.TEXT:  # changes sent before it fell behind
                closed = await socket.receive(timeout=5)
            assert closed.type is WSMsgType.CLOSE and closed.data == FELL_BEHIND
            assert "reconnect for a fresh snapshot" in closed.extra
        async with http.ws_connect(url) as socket:
            snapshot = await socket.receive_json(timeout=5)
            assert [r["id"] for r in snapshot["records"]] == [f"r{i}" for i in range(10)]
