"""One editor's DAP session relayed to the bridge, resumed on the bridge that replaces it.

When the bridge is replaced (``raydap serve --replace``, SIGHUP) it sends each attached client a
``raydapReplaced`` event with what the session needs to go on (:mod:`raydap.adapter.resume`)
and goes. The relay then connects again to the same address, where the new process already
listens, and repeats the editor's ``initialize`` and ``attach`` with that ``resume``: the editor
keeps its thread, frame, variable and breakpoint ids and never sees the change but for a line
of output. Requests the old bridge did not answer are answered with an error saying to ask
again; what the editor sends meanwhile waits and goes to the new bridge.
"""

from __future__ import annotations

import asyncio
import itertools
import socket
import sys
import time
from collections.abc import Awaitable, Callable
from ssl import SSLContext
from typing import Any, Protocol

from raydap.adapter import StreamChannel
from raydap.protocol import (
    Decoder,
    Event,
    ProtocolError,
    Request,
    Response,
    encode,
    error_response,
    event,
)
from raydap.protocol.extension import REPLACED

Message = Request | Response | Event
#: Opens a connection to the bridge's DAP port.
Connect = Callable[[], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]

#: How long to look for the new bridge after a replace (it listens before the old one goes).
RECONNECT_WITHIN = 30.0
#: How long a session that could not be resumed answers the editor, waiting for it to let go.
ANSWER_ALONE_FOR = 10.0
#: Seqs of the relay's own requests, apart from any an editor uses.
OWN_SEQS = 1_000_000_000


class Reader(Protocol):
    async def read(self, n: int) -> bytes: ...


class Writer(Protocol):
    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...


class Editor:
    """The editor's side: messages out, with seqs of the relay's own."""

    def __init__(self, reader: Reader, writer: Writer) -> None:
        self.reader = reader
        self._writer = writer
        self._seq = itertools.count(OWN_SEQS)

    async def send(self, message: Message, seq: int | None = None) -> None:
        self._writer.write(encode(message, next(self._seq) if seq is None else seq))
        await self._writer.drain()

    async def say(self, text: str, category: str = "console") -> None:
        await self.send(event("output", {"category": category, "output": f"raydap: {text}\n"}))


class BridgeGone(Exception):
    """The bridge closed, or answered the relay's own request with a failure."""


class Relay:
    """Serves one editor until either side ends the session."""

    def __init__(
        self,
        editor: Editor,
        connect: Connect,
        prepare: Callable[[Request], Request] = lambda request: request,
    ) -> None:
        self.editor = editor
        self._connect = connect
        self._prepare = prepare
        self._initialize: Request | None = None
        self._attach: Request | None = None
        self._unanswered: dict[int, str] = {}  # editor seq -> command, sent to the bridge
        self._held: list[Message] | None = None  # while resuming: what the editor sent
        self._own_seq = itertools.count(OWN_SEQS)
        self._own: dict[int, asyncio.Future[Response]] = {}
        self._writer: asyncio.StreamWriter | None = None
        self._resuming = False  # attaching to a new bridge on the editor's behalf
        self._ended: str | None = None  # why the session could not go on
        self._let_go = False  # the editor disconnected after that

    async def run(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> int:
        self._writer = writer
        editor = asyncio.create_task(self._from_editor())
        bridge: asyncio.Task[dict[str, Any] | None] | None = asyncio.create_task(
            self._from_bridge(reader)
        )
        try:
            while bridge is not None:
                done, _ = await asyncio.wait({editor, bridge}, return_when=asyncio.FIRST_COMPLETED)
                if editor in done or (resume := bridge.result()) is None:
                    break
                bridge = await self._resume(resume, editor)
            if self._ended is not None and not self._let_go:  # answer it until it lets go
                await asyncio.wait({editor}, timeout=ANSWER_ALONE_FOR)
        finally:
            editor.cancel()
            if bridge is not None:
                bridge.cancel()
            if self._writer is not None:
                self._writer.close()
        return 0

    # -- the editor's side ------------------------------------------------------------------

    async def _from_editor(self) -> None:
        decoder = Decoder()
        while data := await self.editor.reader.read(256 * 1024):
            try:
                messages = decoder.feed(data)
            except ProtocolError as exc:
                if exc.request_seq is not None:
                    reply = error_response(exc.request_seq, exc.command or "?", str(exc))
                    await self.editor.send(reply, 0)
                print(f"raydap dap: the editor sent bad DAP: {exc}", file=sys.stderr)
                return
            for message in messages:
                if isinstance(message, Request):
                    message = self._prepare(message)
                    if message.command == "initialize":
                        self._initialize = message
                    elif message.command == "attach":
                        self._attach = message
                if self._ended is not None:
                    if await self._answer_alone(message):
                        self._let_go = True
                        return
                elif self._held is not None:
                    self._held.append(message)
                else:
                    await self._to_bridge(message)

    async def _to_bridge(self, message: Message) -> None:
        assert self._writer is not None
        if isinstance(message, Request):
            self._unanswered[message.seq] = message.command
        self._writer.write(encode(message, message.seq))
        await self._writer.drain()

    # -- the bridge's side ------------------------------------------------------------------

    async def _from_bridge(self, reader: asyncio.StreamReader) -> dict[str, Any] | None:
        """Relay until the bridge closes (None) or says it was replaced (the resume)."""
        decoder = Decoder()
        try:
            while data := await reader.read(256 * 1024):
                for message in decoder.feed(data):
                    if isinstance(message, Event) and message.event == REPLACED:
                        self._held = []  # from now on, for the new bridge
                        body = message.body if isinstance(message.body, dict) else {}
                        await self.editor.say(
                            f"the bridge was replaced by pid {body.get('pid', '?')}; "
                            "resuming this session there"
                        )
                        resume = body.get("resume")
                        return resume if isinstance(resume, dict) else None
                    await self._from_bridge_one(message)
        except ProtocolError as exc:
            print(f"raydap dap: the bridge sent bad DAP: {exc}", file=sys.stderr)
        finally:
            for future in self._own.values():
                if not future.done():
                    future.set_exception(BridgeGone("the bridge closed the connection"))
            self._own.clear()
        return None

    async def _from_bridge_one(self, message: Message) -> None:
        if isinstance(message, Response):
            own = self._own.pop(message.request_seq, None)
            if own is not None:
                own.set_result(message)
                return
            self._unanswered.pop(message.request_seq, None)
        elif isinstance(message, Event) and message.event == "initialized" and self._resuming:
            return  # the relay's own attach: the editor configured its session long ago
        await self.editor.send(message, message.seq)

    async def _ask(self, command: str, arguments: dict[str, Any]) -> Response:
        assert self._writer is not None
        seq = next(self._own_seq)
        answer = asyncio.get_running_loop().create_future()
        self._own[seq] = answer
        self._writer.write(encode(Request(seq=seq, command=command, arguments=arguments), seq))
        await self._writer.drain()
        response: Response = await answer
        if not response.success:
            raise BridgeGone(f"the new bridge refused {command!r}: {response.message}")
        return response

    # -- resuming on the bridge that replaced this one --------------------------------------

    async def _resume(
        self, resume: dict[str, Any], editor: asyncio.Task[None]
    ) -> asyncio.Task[dict[str, Any] | None] | None:
        """Attach to the new bridge with ``resume``; the task relaying from it, or None when
        the session ends here (the editor is told why)."""
        assert self._writer is not None
        self._writer.close()  # the old process goes; its answers are lost with it
        for seq, command in self._unanswered.items():
            why = "raydap: the bridge was replaced while this was asked; ask again"
            await self.editor.send(error_response(seq, command, why))
        self._unanswered.clear()
        relaying = None
        try:
            reader, self._writer = await self._reconnect(editor)
            relaying = asyncio.create_task(self._from_bridge(reader))
            await self._handshake(resume)
        except (OSError, BridgeGone) as exc:
            if relaying is not None:
                relaying.cancel()
            await self._give_up(str(exc))
            return None
        while self._held:  # in order, with what the editor sends meanwhile
            await self._to_bridge(self._held.pop(0))
        self._held = None
        await self.editor.say("reconnected to the new bridge: same stops, same ids")
        return relaying

    async def _reconnect(
        self, editor: asyncio.Task[None]
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        deadline = time.monotonic() + RECONNECT_WITHIN
        while True:
            try:
                return await self._connect()
            except OSError:
                if time.monotonic() > deadline or editor.done():
                    raise
                await asyncio.sleep(0.2)

    async def _handshake(self, resume: dict[str, Any]) -> None:
        if self._initialize is None or self._attach is None:
            raise BridgeGone("the session was not attached yet; start it again")
        self._resuming = True
        try:
            await self._ask("initialize", self._initialize.args)
            await self._ask("attach", dict(self._attach.args, resume=resume))
            await self._ask("configurationDone", {})
        finally:
            self._resuming = False

    async def _give_up(self, why: str) -> None:
        """End the editor's session, answering what it sent meanwhile and sends after."""
        self._ended = why
        await self.editor.say(f"could not resume the session: {why}", "important")
        for message in self._held or []:  # a disconnect among them ends the session
            self._let_go = await self._answer_alone(message) or self._let_go
        self._held = None
        await self.editor.send(event("terminated"))

    async def _answer_alone(self, message: Message) -> bool:
        """Answer a request with no bridge to ask: True once the editor disconnects."""
        if not isinstance(message, Request):
            return False
        ok = message.command == "disconnect"
        reply = Response(
            request_seq=message.seq, success=ok, command=message.command,
            message=None if ok else f"raydap: {self._ended}",
        )  # fmt: skip
        await self.editor.send(reply)
        return ok


_relaying: set[asyncio.Task[int]] = set()


async def relayed_channel(host: str, port: int, ssl: SSLContext | None = None) -> StreamChannel:
    """A channel to the bridge's DAP port through a :class:`Relay` in this process (over a
    socket pair), so a client here (the pdb of ``raydap attach``) keeps its session when the
    bridge is replaced. The channel ends when the relay does."""

    def connect() -> Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
        return asyncio.open_connection(host, port, ssl=ssl, limit=2**20)

    bridge_in, bridge_out = await connect()
    ours, relays = socket.socketpair()
    relay_in, relay_out = await asyncio.open_connection(sock=relays, limit=2**20)
    running = asyncio.create_task(
        Relay(Editor(relay_in, relay_out), connect).run(bridge_in, bridge_out)
    )
    _relaying.add(running)
    running.add_done_callback(_relaying.discard)
    running.add_done_callback(lambda _: relay_out.close())  # the client reads its end
    reader, writer = await asyncio.open_connection(sock=ours, limit=2**20)
    return StreamChannel(reader, writer, peer=f"{host}:{port}")
