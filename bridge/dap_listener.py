"""The DAP-over-TCP listener: each connection becomes a client session."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from adapter import ClientSession, StreamChannel
from adapter.session import Resolver

log = logging.getLogger(__name__)


class DapListener:
    def __init__(self, resolve: Resolver, capabilities: Callable[[], dict[str, Any]]) -> None:
        self._resolve = resolve
        self._capabilities = capabilities
        self.sessions: set[ClientSession] = set()
        self._server: asyncio.Server | None = None

    async def start(self, host: str, port: int) -> tuple[str, int]:
        self._server = await asyncio.start_server(self._serve, host, port, limit=2**20)
        bound = self._server.sockets[0].getsockname()
        return str(bound[0]), int(bound[1])

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        session = ClientSession(
            StreamChannel(reader, writer), self._resolve, capabilities=self._capabilities
        )
        self.sessions.add(session)
        log.info("DAP client connected from %s", session.peer)
        try:
            await session.run()
        finally:
            self.sessions.discard(session)
            log.info("DAP client %s left", session.peer)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            for session in list(self.sessions):
                await session.channel.close()
            await self._server.wait_closed()
