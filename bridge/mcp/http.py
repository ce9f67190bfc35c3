"""``/mcp`` on the bridge's port: MCP's streamable HTTP, served by the official SDK.

The SDK's transport is an ASGI application and the bridge is aiohttp, so each request, once
the bridge's own middlewares let it in (Host, Origin, token), is handed to the SDK as ASGI
with the caller's token in its scope. The transport is stateless and answers JSON: every
POST carries one message and gets its answer, nothing is kept between them, and a stop of
the bridge leaves no session behind.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiohttp import web
from mcp.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from raydap.bridge.mcp.server import CLIENT_KEY, TOKEN_KEY, Caller

log = logging.getLogger(__name__)

#: Largest request body (one JSON-RPC message); the SDK answers 413 past it.
MAX_BODY_BYTES = 256 * 1024


class McpEndpoint:
    def __init__(self, server: Server[Any]) -> None:
        # The SDK logs every stateless request at INFO ("Terminating session: None").
        logging.getLogger("mcp.server").setLevel(logging.WARNING)
        self._manager = StreamableHTTPSessionManager(
            server, json_response=True, stateless=True, max_request_body_size=MAX_BODY_BYTES
        )
        self._running: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()

    async def start(self) -> None:
        """Run the SDK's session manager (its task group) until :meth:`stop`."""
        ready = asyncio.Event()

        async def run() -> None:
            async with self._manager.run():
                ready.set()
                await self._stop.wait()

        self._running = asyncio.create_task(run())
        waiting = asyncio.create_task(ready.wait())
        await asyncio.wait([self._running, waiting], return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        if self._running.done():
            self._running.result()  # raises why it could not start

    async def stop(self) -> None:
        self._stop.set()
        if self._running is not None:
            try:
                await asyncio.wait_for(self._running, 5)
            except asyncio.TimeoutError:
                log.warning("the MCP server did not stop within 5 s")
            except Exception:  # its own failure, whatever the SDK raised: said, not raised
                log.exception("the MCP server failed as it stopped")

    async def handle(self, request: web.Request, token: Caller) -> web.StreamResponse:
        extra = {TOKEN_KEY: token, CLIENT_KEY: request.remote or "?"}
        return await serve_asgi(self._manager.handle_request, request, extra)


async def serve_asgi(app: Any, request: web.Request, extra: dict[str, Any]) -> web.StreamResponse:
    """Answer an aiohttp request with an ASGI application (whole body first: MCP messages are
    small, and aiohttp has read-limited it already)."""
    body = await request.read()
    transport = request.transport
    server = transport.get_extra_info("sockname") if transport else None
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": f"{request.version.major}.{request.version.minor}",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.raw_path.split("?", 1)[0].encode(),
        "query_string": request.query_string.encode(),
        "root_path": "",
        "headers": [
            (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in request.headers.items()
        ],
        "client": (request.remote or "", 0),
        "server": tuple(server[:2]) if server else None,
        **extra,
    }
    finished = asyncio.Event()
    body_given = False
    response: web.StreamResponse | None = None

    async def receive() -> dict[str, Any]:
        nonlocal body_given
        if not body_given:
            body_given = True
            return {"type": "http.request", "body": body, "more_body": False}
        await finished.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal response
        if message["type"] == "http.response.start":
            response = web.StreamResponse(status=message["status"])
            for name, value in message.get("headers", []):
                response.headers.add(name.decode("latin-1"), value.decode("latin-1"))
            await response.prepare(request)
        elif message["type"] == "http.response.body" and response is not None:
            await response.write(message.get("body", b""))
            if not message.get("more_body", False):
                await response.write_eof()

    try:
        await app(scope, receive, send)
    finally:
        finished.set()
    if response is None:
        raise web.HTTPInternalServerError(text='{"error": "the MCP transport gave no answer"}')
    return response
