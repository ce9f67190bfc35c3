"""The DAP-over-TCP listener: each connection becomes a client session."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable
from ssl import SSLContext
from typing import Any

from raydap.adapter import ClientSession, StreamChannel
from raydap.adapter.sessions.session import Audit, Authorize, Resolver
from raydap.bridge.server.limits import ConnectionLimiter
from raydap.live.redact import DEFAULT as DEFAULT_REDACTOR
from raydap.live.redact import Redactor

log = logging.getLogger(__name__)


class DapListener:
    def __init__(
        self,
        resolve: Resolver,
        capabilities: Callable[[], dict[str, Any]],
        *,
        authorize: Authorize,
        audit: Audit | None = None,
        limiter: ConnectionLimiter | None = None,
        handshake_timeout: float = 10.0,
        sessions: set[ClientSession] | None = None,
        redactor: Redactor = DEFAULT_REDACTOR,
    ) -> None:
        """``redactor``: what a view token's sessions hide (the bridge's ``--redact``)."""
        self._resolve = resolve
        self._capabilities = capabilities
        self._authorize = authorize
        self._audit = audit
        self._limiter = limiter or ConnectionLimiter()
        self._handshake_timeout = handshake_timeout
        self._redactor = redactor
        #: The sessions being served (shared with the WebSocket door: see ``Bridge.sessions``).
        self.sessions: set[ClientSession] = set() if sessions is None else sessions
        self._server: asyncio.Server | None = None

    async def start(
        self,
        host: str | None = None,
        port: int | None = None,
        ssl: SSLContext | None = None,
        *,
        sock: socket.socket | None = None,
    ) -> tuple[str, int]:
        """Listen on ``host:port``, or on a socket already listening (``sock``)."""
        self._server = await asyncio.start_server(
            self._serve, host, port, limit=2**20, ssl=ssl, sock=sock
        )
        bound = self._server.sockets[0].getsockname()
        return str(bound[0]), int(bound[1])

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        address = str((writer.get_extra_info("peername") or ("?",))[0])
        refused = self._limiter.acquire(address)
        if refused is not None:
            log.warning("refusing a DAP connection: %s", refused)
            writer.close()
            return
        session = ClientSession(
            StreamChannel(reader, writer),
            self._resolve,
            capabilities=self._capabilities,
            authorize=self._authorize,
            audit=self._audit,
            handshake_timeout=self._handshake_timeout,
            redactor=self._redactor,
        )
        self.sessions.add(session)
        log.info("DAP client connected from %s", session.peer)
        try:
            await session.run()
        finally:
            self.sessions.discard(session)
            self._limiter.release(address)
            log.info("DAP client %s left", session.peer)

    def stop_accepting(self) -> None:
        """Close the listening socket; the sessions being served go on."""
        if self._server is not None:
            self._server.close()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            for session in list(self.sessions):
                await session.channel.close()
            await self._server.wait_closed()
