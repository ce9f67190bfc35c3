"""``GET /pdb?breakpoint=pdb-...``: a legacy pdb's TCP socket, relayed over a WebSocket.

Legacy ``RAY_DEBUG=legacy`` workers serve a plain pdb on a socket of their node; through
this, ``raydap attach pdb-...`` reaches it from wherever the bridge is. Only sockets the
bridge lists as legacy breakpoints are reached, only with a token that may run code, and
each direction is size-capped.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import json
from collections.abc import Awaitable, Callable

from aiohttp import WSMsgType, web

from raydap.bridge.cluster.pdb_keys import Unreachable, pdb_address
from raydap.bridge.workers.records import BreakpointRecord

#: What one WebSocket frame from the client may hold (a typed line, or a pasted block).
MAX_INPUT_BYTES = 64 * 1024
CONNECT_TIMEOUT = 5.0
_CHUNK = 64 * 1024

NodeIp = Callable[[str], Awaitable[str | None]]


def _refuse(status: type[web.HTTPException], text: str) -> web.HTTPException:
    return status(text=json.dumps({"error": text}), content_type="application/json")


async def serve_pdb(
    request: web.Request, find: Callable[[str], BreakpointRecord], node_ip: NodeIp
) -> web.StreamResponse:
    """Connect to the worker's pdb first (so a failure is an HTTP answer that says why),
    then upgrade and relay until either side closes. ``find``: the record an id names (the
    workers service's)."""
    wanted = request.query.get("breakpoint", "")
    try:
        record = find(wanted)
    except LookupError as exc:
        raise _refuse(web.HTTPNotFound, str(exc)) from None
    if record.kind != "legacy-pdb":
        raise _refuse(
            web.HTTPBadRequest,
            f"{record.id} is not a legacy pdb breakpoint: attach with `raydap attach {record.id}`",
        )
    try:
        host, port = await pdb_address(
            record.node_ip, record.debugger_port, record.node_id, node_ip
        )
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(host, port), CONNECT_TIMEOUT
        )
    except Unreachable as exc:
        raise _refuse(web.HTTPBadGateway, f"cannot reach {record.id}: {exc}") from None
    except (OSError, asyncio.TimeoutError) as exc:
        raise _refuse(
            web.HTTPBadGateway,
            f"cannot reach {record.id}'s pdb at {record.node_ip}:{record.debugger_port}: "
            f"{exc or 'timed out'} (its pdb takes one connection: is someone else on it?)",
        ) from None
    socket = web.WebSocketResponse(max_msg_size=MAX_INPUT_BYTES, heartbeat=30)
    await socket.prepare(request)

    async def to_client() -> None:
        text = codecs.getincrementaldecoder("utf-8")(errors="replace")
        while chunk := await reader.read(_CHUNK):
            await socket.send_str(text.decode(chunk))

    async def to_pdb() -> None:
        async for message in socket:
            if message.type in (WSMsgType.TEXT, WSMsgType.BINARY):
                data = message.data
                writer.write(data.encode() if isinstance(data, str) else data)
                await writer.drain()

    relays = [asyncio.create_task(to_client()), asyncio.create_task(to_pdb())]
    try:
        await asyncio.wait(relays, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for relay in relays:
            relay.cancel()
        for relay in relays:
            with contextlib.suppress(asyncio.CancelledError, ConnectionError, RuntimeError):
                await relay
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()
        await socket.close()
    return socket
