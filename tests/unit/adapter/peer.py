"""A minimal DAP peer that stands in for debugpy where a test needs a message order, or an
event, that real debugpy cannot be made to send on demand (two threads stopped and one of them
exiting; a ``breakpoint`` event with a nested source while two sessions watch). It does the
handshake as debugpy 1.8 does, reports one stop, verifies every breakpoint it is given (with
ids of its own, new ones on each request, as pydevd numbers them), answers every other request
with an empty success, and sends whatever events the test pushes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from raydap.adapter import Upstream, open_tcp_channel
from raydap.protocol import Decoder, Event, Request, Response, encode, event, response_to

PKG = "/tmp/ray/session_1/runtime_resources/working_dir_files/_ray_pkg_0a1b2c"
FRAME = {"id": 7, "name": "train_step", "line": 3, "column": 1,
         "source": {"name": "train.py", "path": f"{PKG}/train.py"}}  # fmt: skip


class ScriptedPeer:
    def __init__(self) -> None:
        self._writers: list[asyncio.StreamWriter] = []
        self._seq = 0
        self._breakpoint_ids = 100
        #: The breakpoint requests received, as sent by the bridge.
        self.breakpoint_requests: list[dict[str, Any]] = []
        #: Every command received, in order.
        self.received: list[str] = []
        #: Commands whose answer (and everything after it) waits until their event is set.
        self.holding: dict[str, asyncio.Event] = {}
        #: Whether the bridge's ``disconnect`` could be answered: None until one came.
        self.disconnect_answered: bool | None = None

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.append(writer)
        decoder, attach = Decoder(), None
        while data := await reader.read(65536):
            for request in decoder.feed(data):
                assert isinstance(request, Request)
                self.received.append(request.command)
                if request.command in self.holding:
                    await self.holding[request.command].wait()
                if request.command == "attach":
                    attach = request
                    self.write(event("initialized"))
                elif request.command == "configurationDone":
                    assert attach is not None
                    self.write(response_to(request), response_to(attach))
                    self.write(event("stopped", {"reason": "breakpoint", "threadId": 1}))
                elif request.command == "setBreakpoints":
                    self.breakpoint_requests.append(request.args)
                    self.write(response_to(request, {"breakpoints": self._verify(request.args)}))
                elif request.command == "stackTrace":
                    self.write(response_to(request, {"stackFrames": [FRAME], "totalFrames": 1}))
                elif request.command == "disconnect":
                    # As debugpy's adapter: "terminated" first, the answer once the worker
                    # was told (a moment later); a connection closed by then makes its
                    # answer fail, which ends debugpy's adapter.
                    self.write(event("terminated"))
                    await writer.drain()
                    self.disconnect_answered = not await _closed_within(reader, 0.3)
                    if self.disconnect_answered:
                        self.write(response_to(request))
                else:
                    self.write(response_to(request, {}))
            await writer.drain()

    def _verify(self, arguments: dict[str, Any]) -> list[dict[str, Any]]:
        verified = []
        for breakpoint in arguments.get("breakpoints", []):
            self._breakpoint_ids += 1
            line, source = breakpoint["line"], arguments["source"]
            verified.append(
                {"id": self._breakpoint_ids, "verified": True, "line": line, "source": source}
            )
        return verified

    def write(self, *messages: Event | Response) -> None:
        """Send messages to the connected bridge, in one write."""
        data = b""
        for message in messages:
            self._seq += 1
            data += encode(message, self._seq)
        self._writers[-1].write(data)


async def _closed_within(reader: asyncio.StreamReader, seconds: float) -> bool:
    """Whether the other end closes within ``seconds`` (a bounded wait for nothing to happen)."""
    try:
        return await asyncio.wait_for(reader.read(1), seconds) == b""
    except asyncio.TimeoutError:
        return False


@asynccontextmanager
async def held_peer() -> AsyncIterator[tuple[ScriptedPeer, Upstream]]:
    """A peer and an upstream that finished the handshake with it (thread 1 stopped)."""
    peer = ScriptedPeer()
    server = await asyncio.start_server(peer.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    upstream = Upstream(await open_tcp_channel("127.0.0.1", port), name="peer")
    try:
        await upstream.handshake()
        yield peer, upstream
    finally:
        await upstream.close("test over")
        server.close()
