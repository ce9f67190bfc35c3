"""A real debugpy process, held by a real Upstream, served by a real DAP listener."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
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

DEBUGGEE = Path(__file__).with_name("debuggee.py")


@dataclass
class Debuggee:
    process: subprocess.Popen[str]
    port: int

    def result_line(self) -> str:
        """The line the debuggee prints when ``work`` returns. (Not read to EOF: debugpy's
        adapter subprocess inherits the pipe and outlives the debuggee for a while.)"""
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("result"):
                return line.strip()
        return ""


@pytest.fixture
def debuggee() -> Iterator[Debuggee]:
    process = subprocess.Popen(
        [sys.executable, "-Xfrozen_modules=off", str(DEBUGGEE), "0"],
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYDEVD_DISABLE_FILE_VALIDATION="1"),
    )
    assert process.stdout is not None
    port = int(process.stdout.readline())
    yield Debuggee(process, port)
    if process.poll() is None:
        process.kill()
        process.wait()


@dataclass
class Relay:
    upstream: Upstream
    host: str
    port: int


@pytest.fixture
async def relay(debuggee: Debuggee) -> AsyncIterator[Relay]:
    """The debuggee held (handshake done) and served as breakpoint id ``w1``."""
    upstream = Upstream(
        await open_tcp_channel("127.0.0.1", debuggee.port), name="w1", request_timeout=2.0
    )
    await upstream.handshake()

    async def resolve(arguments: dict[str, Any]) -> WorkerFeed:
        if arguments.get("breakpoint") != "w1":
            raise AttachError(f"no paused worker with id {arguments.get('breakpoint')!r}")
        return SingleWorker(Worker("w1", upstream))

    listener = DapListener(resolve, lambda: bridge_capabilities(upstream.capabilities))
    host, port = await listener.start("127.0.0.1", 0)
    yield Relay(upstream, host, port)
    await listener.close()
    await upstream.detach()
    await asyncio.sleep(0)
