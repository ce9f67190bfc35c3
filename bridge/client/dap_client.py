"""A small DAP client of the bridge: for ``raydap demo --headless``, ``raydap attach`` and tests."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from ssl import SSLContext
from typing import Any

from raydap.adapter import Channel, open_tcp_channel
from raydap.adapter.requests import RequestEngine
from raydap.adapter.sessions.websocket import open_websocket_channel
from raydap.protocol import Event, Request, Response, response_to

Observer = Callable[[Request | Response | Event], None]


class _Observed:
    """A channel that shows every message it receives to an observer (tests check each one
    against the DAP schema)."""

    def __init__(self, channel: Channel, observe: Observer) -> None:
        self._channel = channel
        self._observe = observe
        self.peer = channel.peer

    async def receive(self) -> Request | Response | Event | None:
        message = await self._channel.receive()
        if message is not None:
            self._observe(message)
        return message

    async def send(self, message: Request | Response | Event, seq: int) -> None:
        await self._channel.send(message, seq)

    async def close(self) -> None:
        await self._channel.close()


class DapRequestFailed(Exception):
    def __init__(self, response: Response) -> None:
        super().__init__(response.message or f"{response.command} failed")
        self.response = response


class DapClient:
    """An editor's side of a DAP connection to the bridge: requests, and the events kept in
    order so a caller can wait for the next one of a kind."""

    def __init__(
        self, channel: Channel, observe: Observer | None = None, token: str | None = None
    ) -> None:
        self.channel = channel
        #: The bridge's token: sent with ``attach`` unless the caller gives one.
        self.token = token
        self.events: list[Event] = []
        self.reverse_requests: list[Request] = []
        self.closed = False
        self._observe = observe or (lambda message: None)
        self._taken: set[int] = set()
        self._waiters: list[asyncio.Future[None]] = []
        self._requests = RequestEngine(_Observed(channel, self._observe))
        self._reader = asyncio.create_task(self._read_loop())

    @classmethod
    async def connect(
        cls,
        host: str,
        port: int,
        observe: Observer | None = None,
        ssl: SSLContext | None = None,
        token: str | None = None,
    ) -> DapClient:
        return cls(await open_tcp_channel(host, port, ssl=ssl), observe, token)

    @classmethod
    async def connect_websocket(
        cls, url: str, observe: Observer | None = None, token: str | None = None
    ) -> DapClient:
        """Over ``/dap``: the token goes in the upgrade request (and the attach arguments)."""
        return cls(await open_websocket_channel(url, token), observe, token)

    async def _read_loop(self) -> None:
        try:
            await self._requests.read_loop(self._on_event, self._on_reverse_request)
        finally:
            self.closed = True
            self._requests.fail_pending(ConnectionError("bridge closed the connection"))
            self._wake()

    def _on_event(self, message: Event) -> None:
        self.events.append(message)
        self._wake()

    async def _on_reverse_request(self, message: Request) -> None:
        """A reverse request (startDebugging): accept it, as an editor does."""
        self.reverse_requests.append(message)
        await self._requests.send(response_to(message))

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def send_nowait(self, command: str, arguments: Any = None) -> asyncio.Future[Response]:
        """Send a request; the future resolves to its response (pipelining allowed)."""
        return self._requests.start(command, arguments)

    async def request(
        self, command: str, arguments: Any = None, *, timeout: float = 30.0, check: bool = True
    ) -> Response:
        response = await self._requests.request(command, arguments, timeout=timeout)
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
            while (found := find()) is None:
                if self.closed:
                    raise ConnectionError(f"connection closed before a {name!r} event")
                waiter = asyncio.get_running_loop().create_future()
                self._waiters.append(waiter)
                await waiter
            return found

        return await asyncio.wait_for(wait(), timeout)

    async def wait_more(self, seen: int, timeout: float | None = None) -> None:
        """Until more than ``seen`` events have arrived, or the connection is closed."""

        async def wait() -> None:
            while len(self.events) <= seen and not self.closed:
                waiter = asyncio.get_running_loop().create_future()
                self._waiters.append(waiter)
                await waiter

        await asyncio.wait_for(wait(), timeout)

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
        if self.token is not None:
            arguments.setdefault("token", self.token)
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
            # A bridge that is gone, slow or refusing: the connection closes all the same.
            with contextlib.suppress(asyncio.TimeoutError, OSError, DapRequestFailed):
                await self.request("disconnect", {"terminateDebuggee": False}, timeout=5)
        await self.channel.close()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._reader
