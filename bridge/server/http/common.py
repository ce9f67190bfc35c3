"""What every route of the HTTP door shares: the services it acts through, and one way of
reading a body or a query and of answering an error (JSON ``{"error", "kind"}``)."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from aiohttp import web
from pydantic import BaseModel, ValidationError

from raydap.adapter import ClientSession
from raydap.adapter.errors import Kind, WorkerError, invalid_fields
from raydap.bridge.mcp.http import McpEndpoint
from raydap.bridge.server.audit import AuditLog
from raydap.bridge.server.auth import Authenticator, Token
from raydap.bridge.server.limits import ConnectionLimiter
from raydap.bridge.server.metrics import Metrics
from raydap.bridge.server.pdb_relay import NodeIp
from raydap.bridge.service import Workers
from raydap.bridge.workers.filters import WorkerFilter


class StatusSource(Protocol):
    def __call__(self) -> dict[str, Any]: ...


@dataclass
class Services:
    """What the handlers need from the bridge."""

    #: What a person can do to workers (the MCP tools use the same one).
    workers: Workers
    status: StatusSource
    capabilities: Callable[[], dict[str, Any]]
    auth: Authenticator
    audit: AuditLog
    limiter: ConnectionLimiter
    metrics: Metrics
    handshake_timeout: float = 10.0
    #: Every DAP client session, whichever door it came through.
    sessions: set[ClientSession] = field(default_factory=set)
    #: Where a Ray node is (legacy pdb that listens on localhost is reachable only there).
    node_ip: NodeIp | None = None
    #: ``/mcp`` for coding agents (None: not served).
    mcp: McpEndpoint | None = None


SERVICES = web.AppKey("services", Services)
TOKEN = web.RequestKey("token", Token)
Q = TypeVar("Q", bound=BaseModel)
B = TypeVar("B", bound=BaseModel)
#: A job id, as Ray writes one.
JOB_ID = re.compile(r"[0-9a-fA-F]{1,64}")


def error(
    status: type[web.HTTPException], text: str, kind: Kind | None = None
) -> web.HTTPException:
    """The HTTP error to raise: ``{"error": text, "kind": ...}``."""
    body = {"error": text} | ({"kind": kind.value} if kind is not None else {})
    return status(text=json.dumps(body), content_type="application/json")


#: The HTTP status of each kind of :class:`WorkerError`: the HTTP door's one translation.
STATUS_OF_KIND: dict[Kind, type[web.HTTPException]] = {
    Kind.NOT_FOUND: web.HTTPNotFound,
    Kind.NOT_PAUSED: web.HTTPConflict,
    Kind.ALREADY_PAUSED: web.HTTPConflict,
    Kind.REFUSED: web.HTTPBadGateway,
    Kind.UNREACHABLE: web.HTTPBadGateway,
    Kind.TIMED_OUT: web.HTTPGatewayTimeout,
    Kind.FORBIDDEN: web.HTTPForbidden,
    Kind.INVALID: web.HTTPBadRequest,
    Kind.UNAVAILABLE: web.HTTPServiceUnavailable,
    Kind.PENDING: web.HTTPAccepted,
}


@web.middleware
async def answer_worker_errors(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """A :class:`WorkerError` raised below becomes its kind's status, with the message and the
    kind in the JSON body; handlers name no worker error."""
    try:
        return await handler(request)
    except WorkerError as exc:
        if exc.kind is Kind.PENDING:  # accepted, not failed: said as what is pending and why
            body = {"pending": True, "id": exc.worker, "reason": str(exc), "kind": exc.kind.value}
            raise web.HTTPAccepted(text=json.dumps(body), content_type="application/json") from None
        raise error(STATUS_OF_KIND[exc.kind], str(exc), exc.kind) from None


async def read_body(request: web.Request, model: type[B]) -> B:
    """The JSON body as ``model`` reads it, or 400 with what is wrong."""
    raw = await request.read()
    try:
        return model.model_validate_json(raw or b"{}")
    except ValidationError as exc:
        problems = "; ".join(invalid_fields(exc, whole="body"))
        raise error(web.HTTPBadRequest, f"bad request body: {problems}") from None


def read_query(request: web.Request, model: type[Q]) -> Q:
    """A route's query parameters as ``model`` reads them, or 400 with what is wrong."""
    try:
        return model.model_validate(dict(request.query))
    except ValidationError as exc:
        problems = "; ".join(invalid_fields(exc, whole="query"))
        raise error(web.HTTPBadRequest, f"bad query: {problems}") from None


def filter_in(query: dict[str, str]) -> WorkerFilter:
    """The worker filter a query's fields make (``job``, ``ranks``, ...), or a 400 saying
    what is wrong with it."""
    try:
        return WorkerFilter.model_validate(query)
    except ValidationError as exc:
        problems = "; ".join(invalid_fields(exc, whole="filter"))
        raise error(web.HTTPBadRequest, f"bad filter: {problems}") from None


def flag(query: dict[str, str], name: str) -> bool:
    """A ``1``/``0`` query flag, taken out of ``query``."""
    value = query.pop(name, "0").lower()
    if value not in ("0", "1", "true", "false", "yes", "no", ""):
        raise error(web.HTTPBadRequest, f"{name} is 1 or 0, not {value[:20]!r}")
    return value in ("1", "true", "yes")


def job_in_path(request: web.Request) -> str:
    job = request.match_info["job"]
    if not JOB_ID.fullmatch(job):
        raise error(web.HTTPBadRequest, "a job id is hexadecimal, at most 64 digits")
    return job


def check_condition(condition: str | None, where: str = "") -> None:
    """A breakpoint's or capture point's condition must be a Python expression: said now, not
    by each worker it reaches."""
    if condition is None:
        return
    try:
        compile(condition, "<condition>", "eval")
    except SyntaxError as exc:
        why = f"{where}the condition is not an expression: {exc.msg}"
        raise error(web.HTTPBadRequest, why) from None


def audit(request: web.Request, action: str, **details: Any) -> None:
    """What the request's token did, in the audit log."""
    token: Token = request[TOKEN]
    request.app[SERVICES].audit.record(
        action, client=request.remote or "?", token=token.name, **details
    )
