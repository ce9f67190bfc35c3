"""A small DAP client of the bridge: for ``raydap demo --headless`` and ``raydap attach``."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from ssl import SSLContext
from typing import Any

from raydap.adapter import Channel, open_tcp_channel
from raydap.protocol import Event, Request, Response, response_to

Observer = Callable[[Request | Response | Event], None]


class DapRequestFailed(Exception):
    def __init__(self, response: Response) -> None:
        super().__init__(response.message or f"{response.command} failed")
        self.response = response


class DapClient:
    def __init__(self, channel: Channel, observe: Observer | None = None) -> None:
        self.channel = channel
        self.events: list[Event] = []
        self.reverse_requests: list[Request] = []
        self._observe = observe or (lambda message: None)
        self._taken: set[int] = set()
        self._sending: set[asyncio.Future[None]] = set()
        self._seq = 0
        self._pending: dict[int, asyncio.Future[Response]] = {}
        self._changed = asyncio.Condition()
        self._reader = asyncio.create_task(self._read_loop())
        self.closed = False

    @classmethod
    async def connect(
        cls, host: str, port: int, observe: Observer | None = None, ssl: SSLContext | None = None
    ) -> DapClient:
        return cls(await open_tcp_channel(host, port, ssl=ssl), observe)

    @classmethod
    async def connect_websocket(cls, url: str, observe: Observer | None = None) -> DapClient:
        from raydap.bridge.server.endpoints import open_websocket_channel

        return cls(await open_websocket_channel(url), observe)

    async def _read_loop(self) -> None:
        try:
            while (message := await self.channel.receive()) is not None:
                self._observe(message)
                if isinstance(message, Response):
                    future = self._pending.pop(message.request_seq, None)
                    if future is not None and not future.done():
                        future.set_result(message)
                elif isinstance(message, Event):
                    async with self._changed:
                        self.events.append(message)
                        self._changed.notify_all()
                else:  # a reverse request (startDebugging): accept it, as an editor does
                    self.reverse_requests.append(message)
                    self._seq += 1
                    await self.channel.send(response_to(message), self._seq)
        finally:
            self.closed = True
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(ConnectionError("bridge closed the connection"))
            async with self._changed:
                self._changed.notify_all()

    def send_nowait(self, command: str, arguments: Any = None) -> asyncio.Future[Response]:
        """Send a request; the future resolves to its response (pipelining allowed)."""
        self._seq += 1
        future: asyncio.Future[Response] = asyncio.get_running_loop().create_future()
        self._pending[self._seq] = future
        message = Request(command=command)
        if arguments is not None:
            message.arguments = arguments
        sending = asyncio.ensure_future(self.channel.send(message, self._seq))
        self._sending.add(sending)
        sending.add_done_callback(self._sending.discard)
        return future

    async def request(
        self, command: str, arguments: Any = None, *, timeout: float = 30.0, check: bool = True
    ) -> Response:
        response = await asyncio.wait_for(self.send_nowait(command, arguments), timeout)
        if check and not response.success:
            raise DapRequestFailed(response)
        return response

    async def wait_event(
        self, name: str, *, timeout: float = 30.0, where: Callable[[Event], bool] | None = None
    ) -> Event:
        """The next event called ``name`` not returned before (events are kept in order)."""

        def find() -> Event | None:
            for index, ev in enumerate(self.events):
                if index not in self._taken and ev.event == name and (where is None or where(ev)):
                    self._taken.add(index)
                    return ev
            return None

        async def wait() -> Event:
            async with self._changed:
                while (found := find()) is None:
                    if self.closed:
                        raise ConnectionError(f"connection closed before a {name!r} event")
                    await self._changed.wait()
                return found

        return await asyncio.wait_for(wait(), timeout)

    async def attach(
        self,
        *,
        client_capabilities: dict[str, Any] | None = None,
        configure: Callable[[], Awaitable[None]] | None = None,
        **arguments: Any,
    ) -> Response:
        """The whole handshake an editor does: initialize, attach, then (after ``configure``,
        where an editor sends its breakpoints) configurationDone. The attach response is
        awaited last: the bridge answers it at once, debugpy only after configurationDone."""
        initialize = {"clientID": "raydap-cli", "adapterID": "ray", "linesStartAt1": True,
                      "columnsStartAt1": True, "pathFormat": "path"}  # fmt: skip
        await self.request("initialize", {**initialize, **(client_capabilities or {})})
        attach = self.send_nowait("attach", arguments)
        initialized: asyncio.Future[Any] = asyncio.ensure_future(self.wait_event("initialized"))
        pending: list[asyncio.Future[Any]] = [attach, initialized]
        await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        if attach.done() and not attach.result().success:
            initialized.cancel()
            raise DapRequestFailed(attach.result())
        await initialized
        if configure is not None:
            await configure()
        await self.request("configurationDone")
        response = await asyncio.wait_for(attach, 30)
        if not response.success:
            raise DapRequestFailed(response)
        return response

    async def close(self) -> None:
        if not self.closed:
            with contextlib.suppress(Exception):
                await self.request("disconnect", {"terminateDebuggee": False}, timeout=5)
        await self.channel.close()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._reader
