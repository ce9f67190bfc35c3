"""``raydap serve``: discovery, holder, HTTP API and DAP listener, wired together."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from raydap.adapter import AttachError, bridge_capabilities
from raydap.bridge.cluster.dashboard import DashboardClient
from raydap.bridge.cluster.discovery import Discovery
from raydap.bridge.cluster.legacy import LegacyPdbDiscovery
from raydap.bridge.server.audit import AuditLog
from raydap.bridge.server.auth import Authenticator, Token
from raydap.bridge.server.dap_listener import DapListener
from raydap.bridge.server.http_api import Services, make_app
from raydap.bridge.server.limits import ConnectionLimiter
from raydap.bridge.workers.follow import resolve
from raydap.bridge.workers.holder import Holder
from raydap.bridge.workers.registry import Registry

log = logging.getLogger(__name__)


@dataclass
class ServeConfig:
    dashboard_url: str
    gcs_address: str | None = None
    host: str = "127.0.0.1"
    port: int = 7800
    dap_port: int = 7801
    poll_interval: float = 0.1
    hold_timeout: float | None = None
    request_timeout: float = 30.0
    tokens: list[Token] = field(default_factory=list)
    audit_log: Path | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    max_connections: int = 256
    max_connections_per_address: int = 32
    handshake_timeout: float = 10.0


class Bridge:
    def __init__(self, config: ServeConfig) -> None:
        self.config = config
        self.registry = Registry()
        self.dashboard = DashboardClient(config.dashboard_url)
        self.holder = Holder(
            self.registry,
            describe=self.dashboard.running_task,
            request_timeout=config.request_timeout,
            hold_timeout=config.hold_timeout,
        )
        self.discovery = Discovery(
            self.dashboard,
            on_paused=self.holder.hold,
            is_known=self.holder.is_known,
            on_poll=self.holder.still_paused,
            interval=config.poll_interval,
        )
        self.resolve = functools.partial(resolve, self.holder)
        self.auth = Authenticator(config.tokens)
        self.audit = AuditLog(config.audit_log)
        self.limiter = ConnectionLimiter(config.max_connections, config.max_connections_per_address)
        self.dap = DapListener(
            self.resolve,
            self.capabilities,
            authorize=self.authorize_attach,
            audit=self.audit.record,
            limiter=self.limiter,
            handshake_timeout=config.handshake_timeout,
        )
        self.http_address: tuple[str, int] = ("", 0)
        self.dap_address: tuple[str, int] = ("", 0)
        self._runner: web.AppRunner | None = None
        self._tasks: list[asyncio.Task[None]] = []

    def capabilities(self) -> dict[str, Any]:
        held = next(iter(self.holder.upstreams.values()), None)
        return bridge_capabilities(held.capabilities if held else None)

    def authorize_attach(self, arguments: dict[str, Any]) -> Token:
        """The TCP listener's check: the token travels in the attach arguments."""
        token = self.auth.check(arguments.get("token"))
        if token is None:
            raise AttachError(
                'this bridge needs a token: add "token": "<secret>" to the attach arguments'
                if "token" not in arguments
                else "the token in the attach arguments is not one this bridge knows"
            )
        return token

    def ssl_context(self) -> ssl.SSLContext | None:
        if self.config.tls_cert is None or self.config.tls_key is None:
            return None
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.config.tls_cert, self.config.tls_key)
        return context

    def status(self) -> dict[str, Any]:
        """What ``/healthz`` says: degraded while discovery cannot reach the dashboard."""
        status: dict[str, Any] = {
            "status": "ok" if self.discovery.healthy else "degraded",
            "held": len(self.holder.upstreams),
            "dap_port": self.dap_address[1],
        }
        if not self.discovery.healthy:
            status["reason"] = self.discovery.problem
        return status

    async def start(self) -> None:
        """Bind both listeners and start discovering; returns once they accept connections."""
        services = Services(
            holder=self.holder,
            status=self.status,
            resolve=self.resolve,
            capabilities=self.capabilities,
            auth=self.auth,
            audit=self.audit,
            limiter=self.limiter,
            handshake_timeout=self.config.handshake_timeout,
        )
        self._runner = web.AppRunner(make_app(services), access_log=None)
        await self._runner.setup()
        tls = self.ssl_context()
        site = web.TCPSite(self._runner, self.config.host, self.config.port, ssl_context=tls)
        await site.start()
        bound = self._runner.addresses[0]
        self.http_address = (str(bound[0]), int(bound[1]))
        self.dap_address = await self.dap.start(self.config.host, self.config.dap_port, tls)
        self._tasks = [
            asyncio.create_task(self.discovery.run(), name="discovery"),
            asyncio.create_task(self._expire_loop(), name="hold timeout"),
        ]
        if self.config.gcs_address:
            legacy = LegacyPdbDiscovery(self.config.gcs_address, self.registry)
            self._tasks.append(asyncio.create_task(legacy.run(), name="legacy pdb discovery"))

    async def _expire_loop(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            await self.holder.expire()

    async def stop(self) -> None:
        """Stop listening and detach from every worker, so they all run on."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.dap.close()
        await self.holder.close()
        if self._runner is not None:
            await self._runner.cleanup()
        await self.dashboard.close()
        self.audit.close()
