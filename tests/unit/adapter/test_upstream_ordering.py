"""Upstream state follows the wire order of what the worker sends.

A minimal DAP peer stands in for debugpy here (real debugpy sends the next stop a moment
later, in a separate read, so it cannot produce this ordering on demand; Ray workers did): it
writes its ``continue`` response and the next ``stopped`` event in one write.
"""

from __future__ import annotations

import asyncio

from raydap.adapter import State, Upstream, open_tcp_channel
from raydap.protocol import Decoder, Event, Request, encode, event, response_to


async def peer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    decoder, seq, attach = Decoder(), 0, None

    def framed(message: object) -> bytes:
        nonlocal seq
        seq += 1
        return encode(message, seq)  # type: ignore[arg-type]

    stopped = event("stopped", {"reason": "breakpoint", "threadId": 1, "allThreadsStopped": True})
    while data := await reader.read(65536):
        for request in decoder.feed(data):
            assert isinstance(request, Request)
            if request.command == "attach":
                attach = request
                writer.write(framed(event("initialized")))
            elif request.command == "configurationDone":
                assert attach is not None
                writer.write(framed(response_to(request)) + framed(response_to(attach)))
                writer.write(framed(stopped))
            elif request.command == "continue":
                answer = response_to(request, {"allThreadsContinued": True})
                writer.write(framed(answer) + framed(stopped))  # one write, one read
            else:
                writer.write(framed(response_to(request, {})))
        await writer.drain()


async def test_a_stop_read_with_the_continue_response_is_kept() -> None:
    server = await asyncio.start_server(peer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    upstream = Upstream(await open_tcp_channel("127.0.0.1", port), name="peer")
    try:
        await upstream.handshake()
        for _ in range(3):
            await upstream.request("continue", {"threadId": 1})
            await asyncio.sleep(0)
            assert upstream.state is State.STOPPED
            assert upstream.top_stop() is not None
    finally:
        await upstream.close("test over")
        server.close()


async def hit_before_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A running worker that hits a breakpoint the moment it is set: its ``stopped`` event,
    naming the new breakpoint's id, is written before the ``setBreakpoints`` response (pydevd
    can do this: the stopping thread and the request's thread write to one queue)."""
    decoder, seq, attach = Decoder(), 0, None

    def framed(message: object) -> bytes:
        nonlocal seq
        seq += 1
        return encode(message, seq)  # type: ignore[arg-type]

    while data := await reader.read(65536):
        for request in decoder.feed(data):
            assert isinstance(request, Request)
            if request.command == "attach":
                attach = request
                writer.write(framed(event("initialized")))
            elif request.command == "configurationDone":
                assert attach is not None
                writer.write(framed(response_to(request)) + framed(response_to(attach)))
            elif request.command == "setBreakpoints":
                hit = {"reason": "breakpoint", "threadId": 1, "hitBreakpointIds": [7]}
                writer.write(framed(event("stopped", hit)))
                await writer.drain()
                await asyncio.sleep(0.05)  # read apart, as on a real wire
                answer = {"breakpoints": [{"id": 7, "verified": True, "line": 3}]}
                writer.write(framed(response_to(request, answer)))
            else:
                writer.write(framed(response_to(request, {})))
        await writer.drain()


async def test_a_stop_sent_before_its_breakpoints_answer_names_the_breakpoint() -> None:
    server = await asyncio.start_server(hit_before_answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    upstream = Upstream(await open_tcp_channel("127.0.0.1", port), name="peer")
    seen: list[object] = []

    class Watcher:
        def upstream_event(self, upstream: Upstream, message: Event) -> None:
            if message.event == "stopped":  # what a session translates, when it is told
                hits = (message.body or {})["hitBreakpointIds"]
                seen.append([upstream.breakpoints.spec_of_id(h) is not None for h in hits])

        def upstream_closed(self, upstream: Upstream, reason: str) -> None: ...

    try:
        await upstream.handshake(expect_stop=False)
        upstream.add_client(Watcher())
        union = ('{"line": 3}',)
        response = await upstream.request(
            "setBreakpoints", {"source": {"path": "/x.py"}, "breakpoints": [{"line": 3}]}
        )
        upstream.breakpoints.answered(
            ("setBreakpoints", "/x.py"), union, response.body["breakpoints"]
        )
        for _ in range(50):
            if seen:
                break
            await asyncio.sleep(0.01)
        assert seen == [[True]]  # shown once the id was known, not before
        assert upstream.state is State.STOPPED
    finally:
        await upstream.close("test over")
        server.close()
