"""A DAP message channel: what sessions talk through, whatever the transport.

The bridge hands the adapter channels (TCP streams here; a WebSocket channel lives with the
bridge's HTTP server), so every session behaves the same over any transport. The sender numbers
what it sends (``seq`` is per connection in DAP), so it knows a request's number before the
bytes leave and can match the response to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections import deque
from ssl import SSLContext
from typing import Protocol, cast

from raydap.protocol import DEFAULT_LIMITS, Decoder, Event, Limits, Request, Response, encode

Message = Request | Response | Event


class Channel(Protocol):
    """One peer's stream of DAP messages."""

    peer: str

    async def receive(self) -> Message | None:
        """The next message; None once the peer has closed. Raises ProtocolError on bad input."""
        ...

    async def send(self, message: Message, seq: int) -> None:
        """Write one message numbered ``seq``; raises ConnectionError once the peer is gone."""
        ...

    async def close(self) -> None: ...


def set_nodelay(writer: asyncio.StreamWriter) -> None:
    """Disable Nagle: DAP is request/response, and delayed ACKs cost 40 ms a message."""
    sock = writer.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class StreamChannel:
    """A channel over an asyncio stream pair (TCP, with or without TLS)."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        limits: Limits = DEFAULT_LIMITS,
        peer: str | None = None,
        unread: bytes = b"",
    ) -> None:
        """``unread``: bytes this connection received before (in another process), delivered
        before anything read from the reader."""
        self._reader = reader
        self._writer = writer
        self._decoder = Decoder(limits)
        self._pending: deque[Message] = deque(self._decoder.feed(unread))
        address = writer.get_extra_info("peername")
        self.peer = peer or (f"{address[0]}:{address[1]}" if address else "?")
        set_nodelay(writer)

    async def receive(self) -> Message | None:
        while not self._pending:
            data = await self._reader.read(256 * 1024)
            if not data:
                return None
            self._pending.extend(self._decoder.feed(data))
        return self._pending.popleft()

    async def send(self, message: Message, seq: int) -> None:
        if self._writer.is_closing():
            raise ConnectionResetError(f"{self.peer} is closed")
        self._writer.write(encode(message, seq))
        await self._writer.drain()

    def lend(self) -> tuple[int, bytes]:
        """Stop reading and give what another process needs to go on with this connection:
        its socket's descriptor (to pass over a Unix socket) and the bytes read but not yet
        delivered. Only between messages: nothing decoded may be waiting to be received."""
        if self._pending:
            raise RuntimeError(f"{self.peer}: messages are waiting to be received")
        self._transport.pause_reading()
        # asyncio keeps what it read ahead in the reader's buffer, with no public way to take
        # it without consuming it; the connection is being lent, so it is copied, not read.
        read_ahead = bytes(self._reader._buffer)  # type: ignore[attr-defined]
        return self._writer.get_extra_info("socket").fileno(), read_ahead + self._decoder.unread()

    def take_back(self) -> None:
        """The lend did not go through: read again, from where reading stopped."""
        self._transport.resume_reading()

    @property
    def _transport(self) -> asyncio.Transport:
        return cast(asyncio.Transport, self._writer.transport)

    async def close(self) -> None:
        if not self._writer.is_closing():
            self._writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await self._writer.wait_closed()


async def adopt_tcp_channel(sock: socket.socket, unread: bytes, peer: str) -> StreamChannel:
    """Go on with a connection another process lent (:meth:`StreamChannel.lend`): ``unread``
    is delivered before anything read from the socket."""
    reader, writer = await asyncio.open_connection(sock=sock, limit=2**20)
    return StreamChannel(reader, writer, peer=peer, unread=unread)


async def open_tcp_channel(
    host: str, port: int, timeout: float = 5.0, ssl: SSLContext | None = None
) -> StreamChannel:
    """Connect to a DAP server (a worker's debugpy, or a bridge, with TLS if given)."""
    reader, writer = await asyncio.wait_for(
        asyncio.open_connection(host, port, limit=2**20, ssl=ssl), timeout
    )
    return StreamChannel(reader, writer)
