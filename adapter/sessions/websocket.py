"""DAP over WebSocket: one JSON message per text frame, both ends.

It passes through proxies, ingresses and tunnels that forward only HTTP to one port. The
bridge serves it with aiohttp (its HTTP server); raydap's own clients connect with the
``websockets`` library. Sessions behave exactly as over TCP: the channel is the only difference.
"""

from __future__ import annotations

import json
from ssl import SSLContext

from aiohttp import WSMsgType, web
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from raydap.protocol import DEFAULT_LIMITS, Event, ProtocolError, Request, Response, parse_message

Message = Request | Response | Event


def _decode(text: str) -> Message:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ProtocolError(f"frame is not JSON: {exc}") from None
    return parse_message(data)


def _encode(message: Message, seq: int) -> str:
    return json.dumps(message.to_dict(seq), separators=(",", ":"), ensure_ascii=False)


class WebSocketChannel:
    """The bridge's end: a DAP channel over an accepted aiohttp WebSocket."""

    def __init__(self, socket: web.WebSocketResponse, peer: str) -> None:
        self._socket = socket
        self.peer = peer

    async def receive(self) -> Message | None:
        frame = await self._socket.receive()
        if frame.type in (WSMsgType.CLOSE, WSMsgType.CLOSING, WSMsgType.CLOSED):
            return None
        if frame.type == WSMsgType.ERROR:
            raise ProtocolError(f"WebSocket error: {self._socket.exception()}")
        if frame.type != WSMsgType.TEXT:
            raise ProtocolError("DAP over WebSocket takes one JSON message per text frame")
        return _decode(frame.data)

    async def send(self, message: Message, seq: int) -> None:
        if self._socket.closed:
            raise ConnectionResetError(f"{self.peer} is closed")
        await self._socket.send_str(_encode(message, seq))

    async def close(self) -> None:
        await self._socket.close()


class ClientWebSocketChannel:
    """A client's end: a DAP channel over a ``websockets`` connection to a bridge."""

    def __init__(self, connection: ClientConnection, peer: str) -> None:
        self._connection = connection
        self.peer = peer

    async def receive(self) -> Message | None:
        try:
            frame = await self._connection.recv()
        except ConnectionClosed:
            return None
        if not isinstance(frame, str):
            raise ProtocolError("DAP over WebSocket takes one JSON message per text frame")
        return _decode(frame)

    async def send(self, message: Message, seq: int) -> None:
        try:
            await self._connection.send(_encode(message, seq))
        except ConnectionClosed as exc:
            raise ConnectionResetError(f"{self.peer} is closed: {exc}") from None

    async def close(self) -> None:
        await self._connection.close()


async def open_websocket_channel(
    url: str, token: str | None = None, ssl: SSLContext | None = None
) -> ClientWebSocketChannel:
    """Connect to a bridge's ``/dap`` WebSocket (``ws://host:port/dap?...``). No ``Origin`` is
    sent (the bridge refuses foreign browser origins) and no proxy is used."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    connection = await connect(
        url,
        additional_headers=headers,
        max_size=DEFAULT_LIMITS.max_body_bytes,
        proxy=None,
        ssl=ssl if url.startswith("wss:") else None,
        compression=None,
    )
    return ClientWebSocketChannel(connection, url)
