"""WebSocket endpoints: DAP over WebSocket (``/dap``) and the registry feed (``/api/v1/events``)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from aiohttp import WSCloseCode, web

from raydap.adapter import ClientSession
from raydap.adapter.session import Resolver
from raydap.adapter.websocket import WebSocketChannel
from raydap.bridge.workers.registry import Registry, Resync
from raydap.protocol import DEFAULT_LIMITS

#: The events socket's close code for a client that fell behind (1013, "try again later").
FELL_BEHIND = WSCloseCode.TRY_AGAIN_LATER


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
    """Every record now (``snapshot``), then each change (``added``/``updated``/``removed``).

    A client that reads too slowly to keep up is closed with :data:`FELL_BEHIND` and a reason;
    clients then reconnect and start again from a snapshot."""
    socket = web.WebSocketResponse(heartbeat=30)
    await socket.prepare(request)
    changes = registry.subscribe()

    async def pump() -> None:
        records = [r.model_dump(mode="json") for r in registry.records()]
        await socket.send_json({"kind": "snapshot", "records": records})
        while True:
            change = await changes.get()
            if isinstance(change, Resync):
                why = f"fell behind ({change.why}); reconnect for a fresh snapshot"
                await socket.close(code=FELL_BEHIND, message=why.encode()[:123])
                return
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
