"""WebSocket endpoints: DAP over WebSocket (``/dap``) and the registry feed (``/api/v1/events``).

DAP over WebSocket carries one JSON message per text frame, so it passes through proxies,
ingresses and tunnels that forward only HTTP to one port. Sessions behave exactly as on the TCP
listener: the channel is the only difference.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import aiohttp
from aiohttp import WSMsgType, web

from raydap.adapter import ClientSession
from raydap.adapter.session import Resolver
from raydap.bridge.workers.registry import Registry
from raydap.protocol import DEFAULT_LIMITS, Event, ProtocolError, Request, Response, parse_message


class WebSocketChannel:
    """A DAP channel over a WebSocket: one message per text frame."""

    def __init__(
        self,
        socket: web.WebSocketResponse | aiohttp.ClientWebSocketResponse[Any],
        peer: str,
        session: aiohttp.ClientSession | None = None,
    ) -> None:
        self._socket = socket
        self._session = session  # the client side owns its HTTP session
        self.peer = peer

    async def receive(self) -> Request | Response | Event | None:
        frame = await self._socket.receive()
        if frame.type in (WSMsgType.CLOSE, WSMsgType.CLOSING, WSMsgType.CLOSED):
            return None
        if frame.type == WSMsgType.ERROR:
            raise ProtocolError(f"WebSocket error: {self._socket.exception()}")
        if frame.type != WSMsgType.TEXT:
            raise ProtocolError("DAP over WebSocket takes one JSON message per text frame")
        try:
            data = json.loads(frame.data)
        except ValueError as exc:
            raise ProtocolError(f"frame is not JSON: {exc}") from None
        return parse_message(data)

    async def send(self, message: Request | Response | Event, seq: int) -> None:
        if self._socket.closed:
            raise ConnectionResetError(f"{self.peer} is closed")
        await self._socket.send_str(json.dumps(message.to_dict(seq), separators=(",", ":")))

    async def close(self) -> None:
        await self._socket.close()
        if self._session is not None:
            await self._session.close()


async def open_websocket_channel(url: str, token: str | None = None) -> WebSocketChannel:
    """Connect to a bridge's ``/dap`` WebSocket (``ws://host:port/dap?...``)."""
    session = aiohttp.ClientSession()
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        socket = await session.ws_connect(
            url, headers=headers, max_msg_size=DEFAULT_LIMITS.max_body_bytes
        )
    except BaseException:
        await session.close()
        raise
    return WebSocketChannel(socket, url, session)


def preselected(resolve: Resolver, query: dict[str, str]) -> Resolver:
    """``/dap?breakpoint=ID`` or ``/dap?follow={...}`` answers an attach that names neither."""
    defaults: dict[str, Any] = {}
    if query.get("breakpoint"):
        defaults["breakpoint"] = query["breakpoint"]
    elif "follow" in query:
        text = query["follow"].strip()
        defaults["follow"] = True if text in ("", "true", "1") else _json_or_text(text)

    async def resolve_with_defaults(arguments: dict[str, Any]) -> Any:
        if "breakpoint" in arguments or "follow" in arguments:
            return await resolve(arguments)
        return await resolve({**arguments, **defaults})

    return resolve_with_defaults


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text  # the resolver says what a follow filter looks like


async def serve_dap(
    request: web.Request, resolve: Resolver, capabilities: Any, **session_options: Any
) -> web.StreamResponse:
    """One DAP session over this WebSocket (options as :class:`ClientSession` takes them)."""
    socket = web.WebSocketResponse(max_msg_size=DEFAULT_LIMITS.max_body_bytes, heartbeat=30)
    await socket.prepare(request)
    channel = WebSocketChannel(socket, request.remote or "?")
    session = ClientSession(
        channel,
        preselected(resolve, dict(request.query)),
        capabilities=capabilities,
        **session_options,
    )
    await session.run()
    return socket


async def serve_events(request: web.Request, registry: Registry) -> web.StreamResponse:
    """Every record now (``snapshot``), then each change (``added``/``updated``/``removed``)."""
    socket = web.WebSocketResponse(heartbeat=30)
    await socket.prepare(request)
    changes = registry.subscribe()

    async def pump() -> None:
        records = [r.model_dump(mode="json") for r in registry.records()]
        await socket.send_json({"kind": "snapshot", "records": records})
        while True:
            change = await changes.get()
            await socket.send_json(
                {"kind": change.kind, "record": change.record.model_dump(mode="json")}
            )

    pumping = asyncio.create_task(pump())
    try:
        async for _ in socket:  # read (and ignore) until the client closes
            pass
    finally:
        pumping.cancel()
        with contextlib.suppress(asyncio.CancelledError, ConnectionError, RuntimeError):
            await pumping
        registry.unsubscribe(changes)
    return socket
