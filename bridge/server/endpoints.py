"""WebSocket endpoints: DAP over WebSocket (``/dap``) and the registry feed (``/api/v1/events``)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from aiohttp import WSCloseCode, web

from raydap.adapter import ClientSession
from raydap.adapter.sessions.session import Grant, Resolver
from raydap.adapter.sessions.websocket import WebSocketChannel
from raydap.bridge.hangs.verdicts import Verdict as HangVerdict
from raydap.bridge.service import Feeds
from raydap.bridge.workers.registry import Resync
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

    async def resolve_with_defaults(arguments: dict[str, Any], grant: Grant) -> Any:
        if "breakpoint" in arguments or "follow" in arguments:
            return await resolve(arguments, grant)
        return await resolve({**arguments, **defaults}, grant)

    return resolve_with_defaults


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text  # the resolver says what a follow filter looks like


async def serve_dap(
    request: web.Request,
    resolve: Resolver,
    capabilities: Any,
    sessions: set[ClientSession],
    **session_options: Any,
) -> web.StreamResponse:
    """One DAP session over this WebSocket, in ``sessions`` while it lasts (options as
    :class:`ClientSession` takes them)."""
    socket = web.WebSocketResponse(max_msg_size=DEFAULT_LIMITS.max_body_bytes, heartbeat=30)
    await socket.prepare(request)
    channel = WebSocketChannel(socket, request.remote or "?")
    session = ClientSession(
        channel,
        preselected(resolve, dict(request.query)),
        capabilities=capabilities,
        **session_options,
    )
    sessions.add(session)
    try:
        await session.run()
    finally:
        sessions.discard(session)
    return socket


async def serve_events(request: web.Request, feeds: Feeds) -> web.StreamResponse:
    """Every record now (``snapshot``), then each change (``added``/``updated``/``removed``),
    each new hang verdict (``{"kind": "hang", "type": "hang", "verdict"}``; the suspected
    hangs of now follow the snapshot), each capture (``{"kind": "capture", "capture"}``, as
    ``GET /api/v1/captures`` lists it) and each capture point that turned itself off
    (``{"kind": "capture_point_disabled", "point", "reason"}``). Clients ignore kinds they do
    not know. A client that reads too slowly to keep up with records is closed with
    :data:`FELL_BEHIND` and a reason; clients then reconnect and start again from a
    snapshot."""
    registry, hangs, captures = feeds.records, feeds.hangs, feeds.captures
    socket = web.WebSocketResponse(heartbeat=30)
    await socket.prepare(request)
    changes = registry.subscribe()
    verdicts = hangs.subscribe() if hangs is not None else None
    captured = captures.subscribe() if captures is not None else None
    forwarding = asyncio.create_task(_forward(captured, socket)) if captured is not None else None

    async def pump() -> None:
        records = [r.model_dump(mode="json") for r in registry.records()]
        await socket.send_json({"kind": "snapshot", "records": records})
        for verdict in hangs.verdicts() if hangs is not None else []:
            if verdict.state == "suspected_hang":
                await socket.send_json(_hang_message(verdict))
        next_change = asyncio.ensure_future(changes.get())
        next_verdict = asyncio.ensure_future(verdicts.get()) if verdicts else None
        try:
            while True:
                waiting = {next_change, *([next_verdict] if next_verdict else [])}
                await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                if next_verdict is not None and next_verdict.done():
                    await socket.send_json(_hang_message(next_verdict.result()))
                    next_verdict = asyncio.ensure_future(verdicts.get())  # type: ignore[union-attr]
                if not next_change.done():
                    continue
                change = next_change.result()
                if isinstance(change, Resync):
                    why = f"fell behind ({change.why}); reconnect for a fresh snapshot"
                    await socket.close(code=FELL_BEHIND, message=why.encode()[:123])
                    return
                await socket.send_json(
                    {"kind": change.kind, "record": change.record.model_dump(mode="json")}
                )
                next_change = asyncio.ensure_future(changes.get())
        finally:
            next_change.cancel()
            if next_verdict is not None:
                next_verdict.cancel()

    pumping = asyncio.create_task(pump())
    try:
        async for _ in socket:  # read (and ignore) until the client closes
            pass
    finally:
        for task in (pumping, forwarding):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, ConnectionError, RuntimeError):
                    await task
        registry.unsubscribe(changes)
        if hangs is not None and verdicts is not None:
            hangs.unsubscribe(verdicts)
        if captures is not None and captured is not None:
            captures.unsubscribe(captured)
    return socket


async def _forward(queue: asyncio.Queue[dict[str, Any]], socket: web.WebSocketResponse) -> None:
    """Messages of a feed that needs no ordering with the records (captures), as they come."""
    while True:
        message = await queue.get()
        await socket.send_json(message)


def _hang_message(verdict: HangVerdict) -> dict[str, Any]:
    return {"kind": "hang", "type": "hang", "verdict": verdict.model_dump(mode="json")}
