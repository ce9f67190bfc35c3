"""Upstream state follows the wire order of what the worker sends.

A minimal DAP peer stands in for debugpy here (real debugpy cannot produce these orderings on
demand; Ray workers and pydevd did): a ``continue`` response and the next ``stopped`` event in
one write, and a stop at a new breakpoint written before the answer that created it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from raydap.adapter import State, Upstream, open_tcp_channel
from raydap.protocol import Decoder, Event, Request, encode, event, response_to
from tests.waiting import until

STOPPED = event("stopped", {"reason": "breakpoint", "threadId": 1, "allThreadsStopped": True})

#: What the peer does with a request past the handshake: True once it has answered it.
Handler = Callable[[Request, Callable[[object], None], asyncio.StreamWriter], Awaitable[bool]]


def peer(
    handle: Handler, stop_at_attach: bool = True
) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
    """A DAP peer that attaches as debugpy does (``initialized``, then the attach answered
    after ``configurationDone``), optionally stopped, and lets ``handle`` answer the rest;
    anything it leaves is answered with an empty body."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        decoder, seq, attach = Decoder(), 0, None

        def send(message: object) -> None:
            nonlocal seq
            seq += 1
            writer.write(encode(message, seq))  # type: ignore[arg-type]

        while data := await reader.read(65536):
            for request in decoder.feed(data):
                assert isinstance(request, Request)
                if request.command == "attach":
                    attach = request
                    send(event("initialized"))
                elif request.command == "configurationDone":
                    assert attach is not None
                    send(response_to(request))
                    send(response_to(attach))
                    if stop_at_attach:
                        send(STOPPED)
                elif not await handle(request, send, writer):
                    send(response_to(request, {}))
            await writer.drain()

    return serve


async def continued_then_stopped(
    request: Request, send: Callable[[object], None], writer: asyncio.StreamWriter
) -> bool:
    """The ``continue`` answer and the next stop, in one write (so one read)."""
    if request.command != "continue":
        return False
    send(response_to(request, {"allThreadsContinued": True}))
    send(STOPPED)
    return True


async def test_a_stop_read_with_the_continue_response_is_kept() -> None:
    server = await asyncio.start_server(peer(continued_then_stopped), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    upstream = Upstream(await open_tcp_channel("127.0.0.1", port), name="peer")
    try:
        await upstream.handshake()
        for _ in range(3):
            await upstream.request("continue", {"threadId": 1})
            await asyncio.sleep(0)
            assert upstream.state is State.STOPPED
            assert upstream.stops.top() is not None
    finally:
        await upstream.close("test over")
        server.close()


async def hit_before_answer(
    request: Request, send: Callable[[object], None], writer: asyncio.StreamWriter
) -> bool:
    """A running worker that hits a breakpoint the moment it is set: its ``stopped`` event,
    naming the new breakpoint's id, goes out before the ``setBreakpoints`` answer (pydevd can
    do this: the stopping thread and the request's thread write to one queue)."""
    if request.command != "setBreakpoints":
        return False
    send(event("stopped", {"reason": "breakpoint", "threadId": 1, "hitBreakpointIds": [7]}))
    await writer.drain()
    await asyncio.sleep(0.05)  # read apart, as on a real wire
    send(response_to(request, {"breakpoints": [{"id": 7, "verified": True, "line": 3}]}))
    return True


async def test_a_stop_sent_before_its_breakpoints_answer_names_the_breakpoint() -> None:
    server = await asyncio.start_server(
        peer(hit_before_answer, stop_at_attach=False), "127.0.0.1", 0
    )
    port = server.sockets[0].getsockname()[1]
    upstream = Upstream(await open_tcp_channel("127.0.0.1", port), name="peer")
    seen: list[object] = []

    class Watcher:
        debugs = True

        def upstream_event(self, upstream: Upstream, message: Event) -> None:
            if message.event == "stopped":  # what a session translates, when it is told
                hits = (message.body or {})["hitBreakpointIds"]
                seen.append([upstream.breakpoints.spec_of_id(h) is not None for h in hits])

        def upstream_closed(self, upstream: Upstream, reason: str) -> None: ...

    try:
        await upstream.handshake(expect_stop=False)
        upstream.audience.add(Watcher())
        union = ('{"line": 3}',)
        response = await upstream.request(
            "setBreakpoints", {"source": {"path": "/x.py"}, "breakpoints": [{"line": 3}]}
        )
        upstream.breakpoints.book.answered(
            ("setBreakpoints", "/x.py"), union, response.body["breakpoints"]
        )
        await until(lambda: seen, timeout=5, what="the stop shown")
        assert seen == [[True]]  # shown once the id was known, not before
        assert upstream.state is State.STOPPED
    finally:
        await upstream.close("test over")
        server.close()


async def test_a_pause_reaches_the_worker_only_once_its_gate_let_it_through() -> None:
    """Whatever door sends it (an editor's Pause, the page, an agent), a ``pause`` waits for
    the bridge's gate (its job's peers raised) before the worker has it."""
    asked: list[str] = []

    async def record(
        request: Request, send: Callable[[object], None], writer: asyncio.StreamWriter
    ) -> bool:
        asked.append(request.command)
        return False

    server = await asyncio.start_server(peer(record, stop_at_attach=False), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    upstream = Upstream(await open_tcp_channel("127.0.0.1", port), name="peer")
    opened = asyncio.Event()

    async def gate() -> list[str]:
        await opened.wait()
        return []

    try:
        await upstream.handshake(expect_stop=False)
        upstream.gate = gate
        pausing = asyncio.ensure_future(upstream.request("pause", {"threadId": 1}))
        await asyncio.sleep(0.1)
        assert "pause" not in asked and not pausing.done()
        opened.set()
        assert (await asyncio.wait_for(pausing, 5)).success
        assert asked[-1] == "pause"
    finally:
        await upstream.close("test over")
        server.close()
