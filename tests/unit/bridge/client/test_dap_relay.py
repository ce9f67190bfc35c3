"""``raydap dap``'s relay over real sockets, with two scripted bridges: the one that is replaced
and the one that replaces it. The editor's side is in memory."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from raydap.bridge.client.dap_relay import ANSWER_ALONE_FOR, Editor, Relay
from raydap.protocol import Decoder, Event, Request, Response, encode, event, response_to
from raydap.protocol.extension import REPLACED
from tests.waiting import until

Message = Request | Response | Event


class EditorPipes:
    """The editor's ends of stdin and stdout."""

    def __init__(self) -> None:
        self._to_relay: asyncio.Queue[bytes] = asyncio.Queue()
        self._decoder = Decoder()
        self.received: list[Message] = []
        self._seq = 0

    async def read(self, n: int) -> bytes:
        return await self._to_relay.get()

    def write(self, data: bytes) -> None:
        self.received.extend(self._decoder.feed(data))

    async def drain(self) -> None:
        pass

    def ask(self, command: str, arguments: dict[str, Any] | None = None) -> int:
        self._seq += 1
        request = Request(seq=self._seq, command=command, arguments=arguments or {})
        self._to_relay.put_nowait(encode(request, self._seq))
        return self._seq

    def close(self) -> None:
        self._to_relay.put_nowait(b"")

    def taken(self, seq: int) -> bool:
        """Request ``seq`` was asked and the relay has read it (and dealt with it: the relay
        handles what it reads before it reads again)."""
        return self._seq >= seq and self._to_relay.empty()

    def answer(self, seq: int) -> Response | None:
        found = [m for m in self.received if isinstance(m, Response) and m.request_seq == seq]
        assert len(found) <= 1, found
        return found[0] if found else None

    def events(self, name: str) -> list[Event]:
        return [m for m in self.received if isinstance(m, Event) and m.event == name]


class ScriptedBridge:
    """One end of a real TCP connection, played by the test."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._decoder = Decoder()
        self._pending: list[Message] = []

    async def expect(self, command: str) -> Request:
        while not self._pending:
            data = await asyncio.wait_for(self._reader.read(65536), 5)
            assert data, f"the relay closed before sending {command!r}"
            self._pending.extend(self._decoder.feed(data))
        message = self._pending.pop(0)
        assert isinstance(message, Request) and message.command == command, message
        return message

    async def send(self, *messages: Message) -> None:
        for message in messages:
            self._writer.write(encode(message, 1))
        await self._writer.drain()

    async def answer(self, command: str, *then: Message) -> Request:
        request = await self.expect(command)
        await self.send(response_to(request), *then)
        return request

    async def attached(self) -> None:
        await self.answer("initialize")
        await self.answer("attach", event("initialized"))
        await self.answer("configurationDone")

    def close(self) -> None:
        self._writer.close()


Serve = Callable[[ScriptedBridge], Awaitable[None]]


async def bridge(script: Serve) -> AsyncIterator[Callable[[], Any]]:
    """A listening bridge whose first connection plays ``script``; yields how to connect."""
    done = asyncio.get_running_loop().create_future()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await script(ScriptedBridge(reader, writer))
            done.set_result(None)
        except BaseException as exc:
            done.set_exception(exc)
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    yield lambda: asyncio.open_connection("127.0.0.1", port)
    server.close()
    await asyncio.wait_for(done, 5)  # the script's own assertions


async def relay(old: Serve, new: Serve, editor: EditorPipes) -> None:
    """Relay ``editor`` to the old bridge, reconnecting to the new one."""
    old_bridge = bridge(old)
    new_bridge = bridge(new)
    connect_old = await anext(old_bridge)
    connect_new = await anext(new_bridge)
    session = Relay(Editor(editor, editor), connect_new)
    await asyncio.wait_for(session.run(*await connect_old()), 10)
    for scripted in (old_bridge, new_bridge):
        with pytest.raises(StopAsyncIteration):
            await anext(scripted)


RESUME = {"version": 1, "ids": {"threads": [["w1", 1, 1]]}}


def replaced(pid: int = 77) -> Event:
    return event(REPLACED, {"pid": pid, "message": "replaced", "resume": RESUME})


async def test_a_replaced_bridge_is_left_for_the_new_one_with_nothing_lost() -> None:
    editor = EditorPipes()
    initialize = {"adapterID": "ray", "supportsStartDebuggingRequest": True}
    for command, arguments in (("initialize", initialize), ("attach", {"follow": True}),
                               ("configurationDone", None)):  # fmt: skip
        editor.ask(command, arguments)

    async def old(bridge: ScriptedBridge) -> None:
        await bridge.attached()
        await bridge.expect("threads")  # asked, never answered: the process goes
        await bridge.send(replaced(), event("thread", {"reason": "exited", "threadId": 1}))
        await until(lambda: editor.events("output"), what="the editor told")
        editor.ask("stackTrace", {"threadId": 1})  # waits for the new bridge

    async def new(bridge: ScriptedBridge) -> None:
        assert (await bridge.answer("initialize")).arguments == initialize
        attach = await bridge.answer("attach", event("initialized"))
        assert attach.arguments == {"follow": True, "resume": RESUME}
        await bridge.answer("configurationDone", event("stopped", {"threadId": 1}))
        await bridge.answer("stackTrace")
        editor.close()

    threads = 4
    editor.ask("threads")
    await relay(old, new, editor)
    told = editor.answer(threads)
    assert told is not None and not told.success and "ask again" in (told.message or "")
    assert (answered := editor.answer(5)) is not None and answered.success
    assert len(editor.events("initialized")) == 1  # the editor's own attach's only
    assert editor.events("thread") == [] and len(editor.events("stopped")) == 1
    said = [e.body["output"] for e in editor.events("output")]
    assert said == [
        "raydap: the bridge was replaced by pid 77; resuming this session there\n",
        "raydap: reconnected to the new bridge: same stops, same ids\n",
    ]


@pytest.mark.parametrize("asked", ["while resuming", "after the refusal"])
async def test_a_new_bridge_that_refuses_the_resume_ends_the_session_saying_why(
    asked: str,
) -> None:
    """The editor's requests are answered and its disconnect ends the session at once, whether
    they came while the relay was resuming (held) or after it gave up."""
    editor = EditorPipes()
    for command in ("initialize", "attach", "configurationDone"):
        editor.ask(command)

    async def old(bridge: ScriptedBridge) -> None:
        await bridge.attached()
        await bridge.send(replaced())
        told = "terminated" if asked == "after the refusal" else "output"
        await until(lambda: editor.events(told), what=f"the editor's {told} event")
        editor.ask("threads")
        editor.ask("disconnect")

    async def new(bridge: ScriptedBridge) -> None:
        await bridge.answer("initialize")
        request = await bridge.expect("attach")
        if asked == "while resuming":
            await until(lambda: editor.taken(5), what="the editor's disconnect held")
        refusal = Response(request_seq=request.seq, success=False, command="attach",
                           message="resume is not one a raydap bridge gave")  # fmt: skip
        await bridge.send(refusal)

    started = asyncio.get_running_loop().time()
    await relay(old, new, editor)
    assert asyncio.get_running_loop().time() - started < ANSWER_ALONE_FOR / 2  # not waited out
    threads, disconnect = editor.answer(4), editor.answer(5)
    assert threads is not None and not threads.success
    assert "resume is not one" in (threads.message or "")
    assert disconnect is not None and disconnect.success
    assert len(editor.events("terminated")) == 1
    assert "could not resume" in editor.events("output")[-1].body["output"]
