"""A real debugpy process, held by a real Upstream, served by a real DAP listener."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
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
    debugs = True

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

    async def resolve(arguments: dict[str, Any], grant: object) -> WorkerFeed:
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


#: A stand-in for a live Ray worker, and the line of its loop.
LIVE_SCRIPT = Path(__file__).parent / "live_debuggee.py"
LIVE_LOOP = next(
    i for i, line in enumerate(LIVE_SCRIPT.read_text().splitlines(), 1) if "# LOOP" in line
)


@pytest.fixture
async def live(tmp_path: Path) -> AsyncIterator[tuple[Upstream, int, Path, subprocess.Popen[str]]]:
    """The live debuggee held without a stop and served as ``w1``; (upstream, DAP port, the
    file that ends its loop, the process)."""
    flag = tmp_path / "done"
    process = subprocess.Popen(
        [sys.executable, "-Xfrozen_modules=off", str(LIVE_SCRIPT), str(flag)],
        stdout=subprocess.PIPE, text=True, env=dict(os.environ, PYDEVD_DISABLE_FILE_VALIDATION="1"),
    )  # fmt: skip
    assert process.stdout is not None
    port = int(process.stdout.readline())
    upstream = Upstream(await open_tcp_channel("127.0.0.1", port), name="w1", request_timeout=5)
    await upstream.handshake(expect_stop=False)

    async def resolve(arguments: dict[str, object], grant: object) -> WorkerFeed:
        return SingleWorker(Worker("w1", upstream, live=True))

    listener = DapListener(
        resolve, lambda: bridge_capabilities(upstream.capabilities), authorize=any_attach
    )
    _, dap_port = await listener.start("127.0.0.1", 0)
    yield upstream, dap_port, flag, process
    await listener.close()
    await upstream.detach()
    if process.poll() is None:
        process.kill()
    process.wait()
