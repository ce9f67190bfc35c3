"""Requests over a DAP channel: numbering, matching responses, timeouts, and the read loop.

Both ends the bridge drives as a client use it: the upstream (the bridge as debugpy's client)
and :class:`~raydap.bridge.client.dap_client.DapClient` (raydap's own tools as the bridge's
client). The sender numbers what it sends, since ``seq`` is per connection in DAP, so a
request's number is known before its bytes leave and its response can be matched to it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from raydap.adapter.channel import Channel
from raydap.protocol import Event, Request, Response

#: Called with each response and the request it answers, before the requester resumes: what
#: a response changes is applied in wire order (a stop may follow it on the same read).
OnAnswer = Callable[[Request, Response], None]


class RequestEngine:
    """Sends requests over one channel and hands each response to the request it answers."""

    def __init__(self, channel: Channel, *, on_answer: OnAnswer | None = None) -> None:
        self.channel = channel
        self._on_answer = on_answer
        self._seq = 0
        self._pending: dict[int, tuple[asyncio.Future[Response], Request]] = {}
        self._closed: BaseException | None = None

    @property
    def waiting(self) -> int:
        """How many requests wait for their answer."""
        return len(self._pending)

    async def send(self, message: Request | Response | Event) -> int:
        """Number and send any message (an event, a response to a reverse request)."""
        if self._closed is not None:
            raise ConnectionResetError(str(self._closed))
        self._seq += 1
        seq = self._seq
        await self.channel.send(message, seq)
        return seq

    async def request(
        self, command: str, arguments: Any = None, *, timeout: float | None = None
    ) -> Response:
        """Send a request and return its response, successful or not.

        Raises ``asyncio.TimeoutError`` if no answer comes within ``timeout`` seconds, and
        ``ConnectionError`` if the channel closes first; either way only this request fails.
        """
        if self._closed is not None:
            raise ConnectionResetError(str(self._closed))
        message = Request(command=command)
        if arguments is not None:
            message.arguments = arguments
        self._seq += 1
        seq = self._seq
        future: asyncio.Future[Response] = asyncio.get_running_loop().create_future()
        self._pending[seq] = (future, message)
        try:
            await self.channel.send(message, seq)
            return await asyncio.wait_for(future, timeout)
        finally:
            self._pending.pop(seq, None)

    def start(self, command: str, arguments: Any = None) -> asyncio.Future[Response]:
        """Send a request without waiting (pipelining); the future resolves to its response.
        Requests started one after another are numbered and sent in that order."""
        return asyncio.ensure_future(self.request(command, arguments))

    async def read_loop(
        self,
        on_event: Callable[[Event], None],
        on_request: Callable[[Request], Awaitable[None]] | None = None,
    ) -> None:
        """Read until the peer closes, routing each message; raises what the channel raises
        (ProtocolError, ConnectionError). The owner then calls :meth:`fail_pending` with the
        reason it knows best."""
        while (message := await self.channel.receive()) is not None:
            if isinstance(message, Response):
                self._answer(message)
            elif isinstance(message, Event):
                on_event(message)
            elif on_request is not None:
                await on_request(message)

    def fail_pending(self, error: BaseException) -> None:
        """The channel is done: every request still waiting fails with ``error``."""
        self._closed = self._closed or error
        for future, _ in self._pending.values():
            if not future.done():
                future.set_exception(error)

    def _answer(self, response: Response) -> None:
        pending = self._pending.get(response.request_seq)
        if pending is None:
            return  # an answer to a request that timed out, or that was never sent
        future, request = pending
        if self._on_answer is not None:
            self._on_answer(request, response)
        if not future.done():
            future.set_result(response)
