"""``raydap serve``: discovery, holder, HTTP API and DAP listener, wired together; the
connection file is written once both listeners accept connections and removed at stop."""

from __future__ import annotations

import asyncio
import importlib.metadata
import logging
import os
import secrets
import socket
import ssl
from pathlib import Path
from typing import Any

from aiohttp import web

from raydap.adapter import (
    AttachError,
    ClientSession,
    UpstreamError,
    bridge_capabilities,
)
from raydap.adapter.errors import Kind
from raydap.bridge.cluster import ray_auth
from raydap.bridge.cluster.dashboard import DashboardClient
from raydap.bridge.cluster.live_marks import Marks
from raydap.bridge.cluster.locate import Cluster
from raydap.bridge.mcp.desk import Desk
from raydap.bridge.mcp.http import McpEndpoint
from raydap.bridge.mcp.server import make_server
from raydap.bridge.server import connection_file, directories, handover, supervisor
from raydap.bridge.server.audit import AuditLog
from raydap.bridge.server.auth import Authenticator, Token, tokens_for
from raydap.bridge.server.backend import Backend
from raydap.bridge.server.browser import BrowserGuard
from raydap.bridge.server.dap_listener import DapListener
from raydap.bridge.server.http_api import Services, make_app
from raydap.bridge.server.limits import ConnectionLimiter
from raydap.bridge.server.metrics import Metrics
from raydap.bridge.server.settings import Settings
from raydap.bridge.server.token_file import TokenFileWatch
from raydap.bridge.workers.registry import Registry

log = logging.getLogger(__name__)

#: Seconds a stop waits for HTTP requests still being answered.
STOP_REQUESTS_WITHIN = 2.0


class ListenError(OSError):
    """A listener could not be bound; the message names the address and the flag."""

    def __str__(self) -> str:
        return self.strerror or super().__str__()  # the message, without "[Errno 98]"


def listen(host: str, port: int, flag: str) -> socket.socket:
    """A listening TCP socket on the first address ``host`` names (a socket the bridge owns,
    so it can hand it to the process that replaces it). ``flag`` picks another port."""
    try:
        family, _, _, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        return socket.create_server(address, family=family, backlog=128)
    except OSError as exc:
        raise ListenError(
            exc.errno,
            f"cannot listen on {host}:{port}: {os.strerror(exc.errno) if exc.errno else exc} "
            f"(pick another with {flag}, "
            "or --host)",
        ) from None


def _env_secret(settings: Settings) -> str | None:
    return settings.token.get_secret_value() if settings.token is not None else None


def prepare_directories(settings: Settings) -> None:
    """Make or check every directory a bridge with ``settings`` writes (its hand-over socket
    included), raising :class:`~.directories.DirectoryError`: before anything starts."""
    socket_name = handover.socket_path(Path(), os.getpid()).name
    directories.prepare(settings, longest_socket_name=len(socket_name))


class Bridge:
    """The daemon: give it settings and the cluster, ``start`` it, ``stop`` it."""

    def __init__(self, settings: Settings, cluster: Cluster, marks: Marks | None = None) -> None:
        """Raises TokenError for token settings that cannot be used. Live workers are found
        through ``marks`` (:class:`~.backend.Backend`)."""
        self.settings = settings
        self.cluster = cluster
        self.registry = Registry()
        self.limiter = ConnectionLimiter(
            settings.max_connections, settings.max_connections_per_address
        )
        self.metrics = Metrics(self.registry, clients=lambda: self.limiter.open)
        self.dashboard = DashboardClient(
            cluster.dashboard_url, headers=ray_auth.dashboard_headers()
        )
        self.backend = Backend(
            settings, cluster, registry=self.registry, dashboard=self.dashboard,
            metrics=self.metrics, marks=marks,
        )  # fmt: skip
        #: What a person can do to workers: the one service behind every door.
        self.workers = self.backend.workers
        self.auth = Authenticator(tokens_for(settings))
        #: The token file, read again when ``raydap token`` (or a person) edits it.
        self.token_watch = (
            TokenFileWatch(settings.token_file, _env_secret(settings), self._tokens_changed)
            if settings.token_file is not None
            else None
        )
        self.audit = AuditLog(settings.audit_log)
        desk = Desk(self.workers)
        version = importlib.metadata.version("raydap")
        server = make_server(desk, self.audit.record, version, self.metrics.tool_call)
        self.mcp = McpEndpoint(server)
        #: Every DAP client session, over TCP or the ``/dap`` WebSocket.
        self.sessions: set[ClientSession] = set()
        self.dap = DapListener(
            self.workers.attach,
            self.capabilities,
            authorize=self.authorize_attach,
            audit=self.audit.record,
            limiter=self.limiter,
            handshake_timeout=settings.handshake_timeout,
            sessions=self.sessions,
            redactor=self.backend.redactor,
        )
        self.http_address: tuple[str, int] = ("", 0)
        self.dap_address: tuple[str, int] = ("", 0)
        self.connection_file: Path | None = None
        self.shared_connection_file: Path | None = None
        self._runner: web.AppRunner | None = None
        self._listeners: dict[str, socket.socket] = {}
        self._giver: handover.Giver | None = None
        self._site: web.SockSite | None = None
        #: Set once a new bridge process took over: this one is to exit.
        self.replaced = asyncio.Event()

    @property
    def url(self) -> str:
        """The HTTP URL the bridge serves, as a client on this machine reaches it."""
        host, port = self.http_address
        if host in ("0.0.0.0", "::"):
            host = "127.0.0.1"
        if ":" in host:
            host = f"[{host}]"
        return f"{'https' if self.settings.tls else 'http'}://{host}:{port}"

    def capabilities(self) -> dict[str, Any]:
        held = next(iter(self.backend.holder.upstreams.values()), None)
        return bridge_capabilities(held.capabilities if held else None)

    def authorize_attach(self, arguments: dict[str, Any]) -> Token:
        """The TCP listener's check: the token travels in the attach arguments."""
        token = self.auth.check(arguments.get("token"))
        if token is None:
            self.metrics.refused("dap")
            raise AttachError(
                'this bridge needs a token: add "token": "<secret>" to the attach arguments'
                if "token" not in arguments
                else "the token in the attach arguments is not one this bridge knows",
                Kind.FORBIDDEN,
            )
        return token

    def ssl_context(self) -> ssl.SSLContext | None:
        if self.settings.tls_cert is None or self.settings.tls_key is None:
            return None
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.settings.tls_cert, self.settings.tls_key)
        return context

    def status(self) -> dict[str, Any]:
        """What ``/healthz`` says: degraded while discovery cannot reach the dashboard."""
        discovery = self.backend.discovery
        status: dict[str, Any] = {
            "status": "ok" if discovery.healthy else "degraded",
            "held": len(self.backend.holder.upstreams),
            "version": importlib.metadata.version("raydap"),
            "dap_port": self.dap_address[1],
        }
        if not discovery.healthy:
            status["reason"] = discovery.problem
        driver = self.backend.ray_driver.status
        status["ray_driver"] = {"state": driver.state, "why": driver.why}
        return status

    async def start(self, received: handover.Received | None = None) -> None:
        """Bind both listeners and start discovering; returns once they accept connections.
        ``received``: what the bridge this one replaces handed over (listeners, workers).

        Raises :class:`~.directories.DirectoryError` before anything starts if a directory it
        writes cannot be used; a start that fails later stops whatever it had started."""
        prepare_directories(self.settings)
        self.backend.load()
        try:
            await self._start(received)
        except BaseException:
            await self.stop()
            raise

    async def _start(self, received: handover.Received | None) -> None:
        services = Services(
            status=self.status,
            capabilities=self.capabilities,
            auth=self.auth,
            audit=self.audit,
            limiter=self.limiter,
            metrics=self.metrics,
            handshake_timeout=self.settings.handshake_timeout,
            sessions=self.sessions,
            node_ip=self.dashboard.node_ip,
            workers=self.workers,
            mcp=self.mcp,
        )
        await self.mcp.start()
        settings = self.settings
        guard = BrowserGuard(settings.host, settings.allowed_hosts, settings.allowed_origins)
        # A stop gives requests still running (one waiting on Ray) this long, then ends them.
        self._runner = web.AppRunner(
            make_app(services, guard), access_log=None, shutdown_timeout=STOP_REQUESTS_WITHIN
        )
        await self._runner.setup()
        tls = self.ssl_context()
        if received is None:
            self._listeners["http"] = listen(settings.host, settings.port, "--port")
            self._listeners["dap"] = listen(settings.host, settings.dap_port, "--dap-port")
        else:
            offer = received.offer
            self._listeners = {
                "http": received.sockets[offer.http],
                "dap": received.sockets[offer.dap],
            }
        self._site = web.SockSite(self._runner, self._listeners["http"], ssl_context=tls)
        await self._site.start()
        bound = self._runner.addresses[0]
        self.http_address = (str(bound[0]), int(bound[1]))
        self.dap_address = await self.dap.start(ssl=tls, sock=self._listeners["dap"])
        if received is not None:
            kept = received.offer.generated_token
            if kept is not None and self._generated_token is not None:
                self.auth.tokens = [Token("generated", "debug", kept)]
            await self.backend.adopt(received)
        self._start_work()
        self._giver = handover.Giver(
            handover.socket_path(settings.runtime_dir, os.getpid()),
            lend=self._lend,
            taken=self._taken,
            kept=self._kept,
        )
        self._giver.start()
        self.connection_file = connection_file.write(
            settings.runtime_dir,
            connection_file.Connection(
                url=self.url, dap_port=self.dap_address[1], token=self.debug_secret, pid=os.getpid()
            ),
        )
        if self.settings.share_dir is not None:
            self.shared_connection_file = connection_file.write_shared(
                self.settings.share_dir,
                connection_file.Connection(
                    url=self.url, dap_port=self.dap_address[1], pid=os.getpid()
                ),
            )

    def _start_work(self) -> None:
        """The backend's loops and the token file's: stopped while workers are lent."""
        also = {"token file": self.token_watch.run} if self.token_watch is not None else {}
        self.backend.start_work(also)

    # -- handing over to a new bridge process (:mod:`.handover`) ----------------------------

    async def _lend(self, pid: int) -> handover.Lent:
        """Stop this bridge's work and lend its listeners and every worker's connection."""
        why = (
            f"raydap: this bridge (pid {os.getpid()}) is being replaced by pid {pid}: "
            "attach again in a moment"
        )
        await self.backend.stop_work()
        try:
            lent = await self.backend.holder.lending.lend_all(why)
        except BaseException as exc:
            self._start_work()  # whatever went wrong, this bridge works on
            if isinstance(exc, UpstreamError):
                raise handover.HandoverError(str(exc)) from None
            raise
        descriptors = [self._listeners["http"].fileno(), self._listeners["dap"].fileno()]
        workers = []
        for record, descriptor, carried in lent:
            workers.append(
                handover.HandedWorker(record=record, descriptor=len(descriptors), carried=carried)
            )
            descriptors.append(descriptor)
        offer = handover.Offer(
            version=handover.VERSION,
            pid=os.getpid(),
            http=0,
            dap=1,
            workers=workers,
            descriptors=len(descriptors),
            generated_token=self._generated_token,
            hangs=self.backend.hangs.remember() if self.backend.hangs is not None else None,
        )
        return handover.Lent(offer, descriptors)

    async def _taken(self, pid: int) -> None:
        # Accept nothing more: the listening sockets are the new process's now, and a client
        # told to reconnect must reach it, not this process on its way out.
        if self._site is not None:
            await self._site.stop()
        self.dap.stop_accepting()
        sessions = list(self.sessions)
        for session in sessions:
            session.replaced(pid)  # what a client needs to resume its session there
        await asyncio.gather(*(session.sent(timeout=2.0) for session in sessions))
        await self.backend.holder.lending.abandon_all(
            f"this bridge was replaced by pid {pid}: attach again (same port, same stops)"
        )
        supervisor.main_pid_moved(pid)
        self.replaced.set()

    async def _kept(self, why: str) -> None:
        log.warning("%s; serving on", why)
        self.backend.holder.lending.take_back_all()
        self._start_work()

    def _tokens_changed(self, tokens: list[Token]) -> None:
        """Serve the token file's new tokens; sessions of a token taken away end now. A file
        left with none keeps the token generated at the start, if there was one: never an
        open bridge."""
        generated = [t for t in self.auth.tokens if t.name == "generated"]
        self.auth.tokens = tokens or generated or [Token("nobody", "view", secrets.token_hex(32))]
        for session in list(self.sessions):
            if isinstance(session.grant, Token) and session.grant not in self.auth.tokens:
                session.revoke(f"the token {session.grant.name!r} was removed from the bridge")

    @property
    def _generated_token(self) -> str | None:
        tokens = self.auth.tokens
        return tokens[0].secret if len(tokens) == 1 and tokens[0].name == "generated" else None

    @property
    def debug_secret(self) -> str | None:
        """The secret raydap's clients on this machine use: the first debug token's."""
        return next((t.secret for t in self.auth.tokens if t.role == "debug"), None)

    async def stop(self) -> None:
        """Stop listening and detach from every worker, so they all run on. Also what a start
        that failed half-way calls; a second call finds nothing left to stop."""
        if self.connection_file is not None:
            connection_file.remove(self.connection_file)
            self.connection_file = None
        if self.shared_connection_file is not None:
            connection_file.remove(self.shared_connection_file)
            self.shared_connection_file = None
        if self._giver is not None:
            await self._giver.close()
            self._giver = None
        await self.backend.stop_work()
        await self.dap.close()
        await self.backend.close(replaced=self.replaced.is_set())
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        for listener in self._listeners.values():
            listener.close()  # closed already once served; not if the start failed half-way
        await self.mcp.stop()
        await self.dashboard.close()
        self.audit.close()
