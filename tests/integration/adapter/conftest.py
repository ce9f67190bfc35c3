"""A real debugpy process, held by a real Upstream, served by a real DAP listener."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from raydap.adapter import (
    AttachError,
    SingleWorker,
    Upstream,
    Worker,
    WorkerFeed,
    bridge_capabilities,
    open_tcp_channel,
)
from raydap.bridge.server.dap_listener import DapListener
from tests.integration.conftest import Debuggee


class FullGrant:
    """The grant of a debug token, for tests of the adapter alone (the bridge's tokens are
    tested with the bridge)."""

    name = "test"

    def allows(self, command: str) -> bool:
        return True


def any_attach(arguments: dict[str, Any]) -> FullGrant:
    """Lets every attach in: what these tests check is not authentication."""
    return FullGrant()


@dataclass
class Relay:
    upstream: Upstream
    host: str
    port: int


def relay_resolver(held: Relay | Upstream) -> Callable[[dict[str, Any]], Awaitable[WorkerFeed]]:
    """Attach arguments name the one held worker as ``w1``."""
    upstream = held.upstream if isinstance(held, Relay) else held

    async def resolve(arguments: dict[str, Any]) -> WorkerFeed:
        if arguments.get("breakpoint") != "w1":
            raise AttachError(f"no paused worker with id {arguments.get('breakpoint')!r}")
        return SingleWorker(Worker("w1", upstream))

    return resolve


@pytest.fixture
async def relay(debuggee: Debuggee) -> AsyncIterator[Relay]:
    """The debuggee held (handshake done) and served as breakpoint id ``w1``."""
    upstream = Upstream(
        await open_tcp_channel("127.0.0.1", debuggee.port), name="w1", request_timeout=2.0
    )
    await upstream.handshake()
    listener = DapListener(
        relay_resolver(upstream),
        lambda: bridge_capabilities(upstream.capabilities),
        authorize=any_attach,
    )
    host, port = await listener.start("127.0.0.1", 0)
    yield Relay(upstream, host, port)
    await listener.close()
    await upstream.detach()
    await asyncio.sleep(0)
