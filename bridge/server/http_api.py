"""The bridge's HTTP app: its middlewares (one auth check, refusals counted, acting refused
while a new bridge takes over, worker errors as statuses), the routes of each resource
(:mod:`.http`), and the endpoints that are not a resource: who am I, health, metrics, MCP and
the WebSockets."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from raydap.adapter.errors import Kind
from raydap.bridge.server import endpoints, page, pdb_relay
from raydap.bridge.server.auth import Token
from raydap.bridge.server.browser import GUARD, BrowserGuard, add_security_headers, guard_browsers
from raydap.bridge.server.http import breakpoints, captures, hangs, workers
from raydap.bridge.server.http.common import (
    SERVICES,
    TOKEN,
    Services,
    answer_worker_errors,
    audit,
    error,
)
from raydap.bridge.server.page import COOKIE, STATIC_PREFIX

__all__ = ["MAX_BODY_BYTES", "Services", "make_app"]

MAX_BODY_BYTES = 1024 * 1024
#: Reachable without a token: liveness probes must not need a secret, and the web page and
#: its login must load before it has one.
OPEN_PATHS = frozenset({"/healthz", "/", "/api/v1/login", "/api/v1/logout"})
#: POSTed to by view tokens too: MCP sends every message, reads included, as a POST, and its
#: server offers and runs by the token's role, tool by tool.
MCP_PATH = "/mcp"


@web.middleware
async def count_refusals(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """Refusals for credentials (401, 403) or of what a browser sent (415) show in /metrics."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status in (401, 403, 415):
            request.app[SERVICES].metrics.refused("http")
        raise


@web.middleware
async def refuse_while_handing_over(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """While a new bridge takes over (a second or so), what acts on workers is refused with
    why and when to retry, rather than half done; reading goes on."""
    why = request.app[SERVICES].workers.handing_over
    acts = request.method not in ("GET", "HEAD", "OPTIONS")
    if why and acts and request.path.startswith("/api/"):
        refused = error(web.HTTPServiceUnavailable, why, Kind.UNAVAILABLE)
        refused.headers["Retry-After"] = "2"
        raise refused
    return await handler(request)


@web.middleware
async def authenticate(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    services = request.app[SERVICES]
    if request.path in OPEN_PATHS or request.path.startswith(STATIC_PREFIX):
        return await handler(request)
    header = request.headers.get("Authorization")
    if header is not None:
        token = services.auth.from_header(header)
    else:  # the web page, logged in with its HttpOnly cookie
        token = services.auth.check(request.cookies.get(COOKIE))
    if token is None:
        raise error(
            web.HTTPUnauthorized,
            "this bridge needs a token: send 'Authorization: Bearer <secret>' (raydap "
            "commands find it in the bridge's connection file, or read RAYDAP_TOKEN)",
        )
    acts = request.method not in ("GET", "HEAD", "OPTIONS")
    if acts and not token.allows("continue") and request.path != MCP_PATH:
        raise error(web.HTTPForbidden, f"the token {token.name!r} may only look: use a debug token")
    request[TOKEN] = token
    return await handler(request)


async def who_am_i(request: web.Request) -> web.Response:
    """The token this request came with: its name, its role, and whether it may run code (the
    page disables what a view token would be refused)."""
    token: Token = request[TOKEN]
    return web.json_response(
        {"name": token.name, "role": token.role, "runs_code": token.allows("evaluate")}
    )


async def mcp(request: web.Request) -> web.StreamResponse:
    """MCP for coding agents (streamable HTTP): the tools of ``raydap.bridge.mcp``."""
    endpoint = request.app[SERVICES].mcp
    if endpoint is None:
        raise error(web.HTTPServiceUnavailable, "this bridge serves no MCP", Kind.UNAVAILABLE)
    with _connection_slot(request):  # a call may wait for workers: one of the limited slots
        return await endpoint.handle(request, request[TOKEN])


async def metrics(request: web.Request) -> web.Response:
    body = request.app[SERVICES].metrics.exposition()
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


async def healthz(request: web.Request) -> web.Response:
    return web.json_response(request.app[SERVICES].status())


@contextlib.contextmanager
def _connection_slot(request: web.Request) -> Iterator[None]:
    """One of the limited connections, for a long-lived socket (429 when none is left)."""
    limiter = request.app[SERVICES].limiter
    address = request.remote or "?"
    refused = limiter.acquire(address)
    if refused is not None:
        raise error(web.HTTPTooManyRequests, refused)
    try:
        yield
    finally:
        limiter.release(address)


async def dap_socket(request: web.Request) -> web.StreamResponse:
    services = request.app[SERVICES]
    with _connection_slot(request):
        token: Token = request[TOKEN]
        return await endpoints.serve_dap(
            request,
            services.workers.attach,
            services.capabilities,
            services.sessions,
            authorize=lambda arguments: token,  # checked on the upgrade request
            audit=services.audit.record,
            handshake_timeout=services.handshake_timeout,
            redactor=services.workers.redactor,
        )


async def pdb_socket(request: web.Request) -> web.StreamResponse:
    """A legacy pdb, relayed: it runs any code typed, so it needs a debug token."""
    services = request.app[SERVICES]
    token: Token = request[TOKEN]
    if not token.allows("evaluate"):
        raise error(web.HTTPForbidden, f"the token {token.name!r} may only look: use a debug token")
    with _connection_slot(request):
        audit(request, "pdb", worker=request.query.get("breakpoint", ""))
        return await pdb_relay.serve_pdb(
            request, services.workers.record, services.node_ip or _no_nodes
        )


async def _no_nodes(node_id: str) -> str | None:
    return None


async def events_socket(request: web.Request) -> web.StreamResponse:
    return await endpoints.serve_events(request, request.app[SERVICES].workers.feeds())


def make_app(services: Services, guard: BrowserGuard) -> web.Application:
    app = web.Application(
        client_max_size=MAX_BODY_BYTES,
        middlewares=[
            count_refusals,
            guard_browsers,
            authenticate,
            refuse_while_handing_over,
            answer_worker_errors,
        ],
    )
    app[SERVICES] = services
    app[GUARD] = guard
    app.on_response_prepare.append(add_security_headers)
    page.add_routes(app, services.auth)
    app.router.add_get("/api/v1/me", who_am_i)
    for resource in (workers, hangs, breakpoints, captures):
        app.router.add_routes(resource.routes)
    app.router.add_get("/api/v1/events", events_socket)
    app.router.add_get("/dap", dap_socket)
    app.router.add_get("/pdb", pdb_socket)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics)
    # POST only: the transport is stateless (no session to DELETE) and sends nothing unasked
    # (no stream to GET), so both get 405, as MCP allows.
    app.router.add_post(MCP_PATH, mcp)
    return app
