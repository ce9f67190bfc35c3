"""The bridge's HTTP API (JSON) and its WebSocket endpoints, behind one auth check."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Annotated, Any, Protocol, TypeVar

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from raydap.adapter import ClientSession
from raydap.adapter.errors import Kind, WorkerError, invalid_fields
from raydap.bridge.captures.store import CaptureKind
from raydap.bridge.hangs import stacks
from raydap.bridge.mcp.http import McpEndpoint
from raydap.bridge.server import endpoints, page, pdb_relay
from raydap.bridge.server.audit import AuditLog
from raydap.bridge.server.auth import Authenticator, Token
from raydap.bridge.server.browser import GUARD, BrowserGuard, add_security_headers, guard_browsers
from raydap.bridge.server.limits import ConnectionLimiter
from raydap.bridge.server.metrics import Metrics
from raydap.bridge.server.page import COOKIE, STATIC_PREFIX
from raydap.bridge.server.pdb_relay import NodeIp
from raydap.bridge.service import Workers
from raydap.bridge.workers import meshes
from raydap.bridge.workers.filters import RankSetText, WorkerFilter
from raydap.bridge.workers.records import RecordState

MAX_BODY_BYTES = 1024 * 1024
#: Reachable without a token: liveness probes must not need a secret, and the web page and
#: its login must load before it has one.
OPEN_PATHS = frozenset({"/healthz", "/", "/api/v1/login", "/api/v1/logout"})
#: POSTed to by view tokens too: MCP sends every message, reads included, as a POST, and its
#: server offers and runs by the token's role, tool by tool.
MCP_PATH = "/mcp"


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
Q = TypeVar("Q", bound=BaseModel)
TOKEN = web.RequestKey("token", Token)


class GroupBody(BaseModel):
    """What names a group of workers to continue or pause."""

    model_config = ConfigDict(extra="forbid")
    filter: WorkerFilter = Field(default_factory=WorkerFilter)


class WatchBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    job: str = Field(min_length=1, max_length=64, pattern=r"^[0-9a-fA-F]+$")


class EvaluateBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    expression: str = Field(min_length=1, max_length=10_000)
    filter: WorkerFilter = Field(default_factory=WorkerFilter)


class CapturePointBody(BaseModel):
    """A capture point set over HTTP (the CLI's ``raydap capture`` sends this)."""

    model_config = ConfigDict(extra="forbid")
    path: str = Field(min_length=1, max_length=4096)
    line: int = Field(ge=1, le=10_000_000)
    condition: str | None = Field(None, min_length=1, max_length=2000)
    job: str | None = Field(None, min_length=1, max_length=64, pattern=r"^[0-9a-fA-F]+$")
    rank: int | None = Field(None, ge=0, le=1_000_000)
    #: Given only to the ranks this rank set names (docs/rank-sets.md).
    ranks: RankSetText | None = None
    #: Seconds between two captures of one worker at least.
    interval: float | None = Field(None, ge=0, le=86_400)
    #: Captures of one worker at most.
    most: int | None = Field(None, ge=1, le=100_000)
    #: Milliseconds a capture may cost its worker before the point turns itself off.
    budget_ms: float | None = Field(None, gt=0, le=60_000)
    #: Seconds until the point stops capturing.
    expires_in: float | None = Field(None, gt=0, le=7 * 86_400)


class LineBreakpoint(BaseModel):
    model_config = ConfigDict(extra="forbid")
    line: int = Field(ge=1, le=10_000_000)
    condition: str | None = Field(None, min_length=1, max_length=2000)


class LineBreakpointsBody(BaseModel):
    """Every breakpoint the caller wants in one file of a job's live workers (none: clear)."""

    model_config = ConfigDict(extra="forbid")
    path: str = Field(min_length=1, max_length=4096)
    job: str = Field(min_length=1, max_length=64, pattern=r"^[0-9a-fA-F]+$")
    breakpoints: list[LineBreakpoint] = Field(max_length=1000)
    #: Only for these ranks (a rank set, docs/rank-sets.md): kept apart from the caller's
    #: breakpoints for every rank, and given to ranks known later.
    ranks: RankSetText | None = None


def _error(
    status: type[web.HTTPException], text: str, kind: Kind | None = None
) -> web.HTTPException:
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
        raise _error(STATUS_OF_KIND[exc.kind], str(exc), exc.kind) from None


async def _body(request: web.Request, model: type[BaseModel]) -> Any:
    raw = await request.read()
    try:
        return model.model_validate_json(raw or b"{}")
    except ValidationError as exc:
        problems = "; ".join(invalid_fields(exc, whole="body"))
        raise _error(web.HTTPBadRequest, f"bad request body: {problems}") from None


def _query(request: web.Request, model: type[Q]) -> Q:
    """A route's query parameters as ``model`` reads them, or 400 with what is wrong."""
    try:
        return model.model_validate(dict(request.query))
    except ValidationError as exc:
        problems = "; ".join(invalid_fields(exc, whole="query"))
        raise _error(web.HTTPBadRequest, f"bad query: {problems}") from None


class CapturesQuery(BaseModel):
    """``GET /api/v1/captures``: which captures."""

    model_config = ConfigDict(extra="forbid")
    job: str | None = Field(None, max_length=64)
    rank: Annotated[int, Field(ge=0, le=2**31)] | None = None
    point: str | None = Field(None, max_length=64)
    kind: CaptureKind | None = None

    @field_validator("rank", mode="before")
    @classmethod
    def _ascii_digits(cls, value: object) -> object:
        if isinstance(value, str) and not (value.isascii() and value.isdigit()):
            raise ValueError("a rank is a number such as 0 or 12")
        return value


class ShowQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")
    expression: str = Field(min_length=1, max_length=1000, description="what to show: loss")


def _audit(request: web.Request, action: str, **details: Any) -> None:
    token: Token = request[TOKEN]
    request.app[SERVICES].audit.record(
        action, client=request.remote or "?", token=token.name, **details
    )


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
        error = _error(web.HTTPServiceUnavailable, why, Kind.UNAVAILABLE)
        error.headers["Retry-After"] = "2"
        raise error
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
        raise _error(
            web.HTTPUnauthorized,
            "this bridge needs a token: send 'Authorization: Bearer <secret>' (raydap "
            "commands find it in the bridge's connection file, or read RAYDAP_TOKEN)",
        )
    acts = request.method not in ("GET", "HEAD", "OPTIONS")
    if acts and not token.allows("continue") and request.path != MCP_PATH:
        raise _error(
            web.HTTPForbidden, f"the token {token.name!r} may only look: use a debug token"
        )
    request[TOKEN] = token
    return await handler(request)


async def who_am_i(request: web.Request) -> web.Response:
    """The token this request came with: its name, its role, and whether it may run code (the
    page disables what a view token would be refused)."""
    token: Token = request[TOKEN]
    return web.json_response(
        {"name": token.name, "role": token.role, "runs_code": token.allows("evaluate")}
    )


async def list_breakpoints(request: web.Request) -> web.Response:
    """Paused workers (live ones only while paused: ``/api/v1/workers`` has them all)."""
    records = request.app[SERVICES].workers.records()
    paused = [
        r.model_dump(mode="json")
        for r in records
        if not (r.live and r.state == RecordState.RUNNING)
    ]
    return web.json_response({"breakpoints": paused})


async def list_workers(request: web.Request) -> web.Response:
    """Every held worker, running or paused, by the same ids as ``/api/v1/breakpoints``;
    a filter in the query (``?ranks=tp=1``) keeps those it matches."""
    where = _filter_in(dict(request.query))
    held = [r for r in request.app[SERVICES].workers.held() if where.matches(r)]
    return web.json_response({"workers": [r.model_dump(mode="json") for r in held]})


def _filter_in(query: dict[str, str]) -> WorkerFilter:
    """The worker filter a query's fields make (``job``, ``ranks``, ...), or a 400 saying
    what is wrong with it."""
    try:
        return WorkerFilter.model_validate(query)
    except ValidationError as exc:
        problems = "; ".join(invalid_fields(exc, whole="filter"))
        raise _error(web.HTTPBadRequest, f"bad filter: {problems}") from None


async def get_breakpoint(request: web.Request) -> web.Response:
    record = request.app[SERVICES].workers.record(request.match_info["id"])
    return web.json_response(record.model_dump(mode="json"))


async def continue_one(request: web.Request) -> web.Response:
    [rid] = await request.app[SERVICES].workers.continue_workers(request.match_info["id"])
    _audit(request, "continue", worker=rid)
    return web.json_response({"continued": [rid]})


async def continue_group(request: web.Request) -> web.Response:
    body: GroupBody = await _body(request, GroupBody)
    ids = await request.app[SERVICES].workers.continue_workers(where=body.filter)
    for rid in ids:
        _audit(request, "continue", worker=rid)
    return web.json_response({"continued": ids})


async def pause_group(request: web.Request) -> web.Response:
    """Pause every held worker of a filter that runs (live workers), through its debugpy."""
    body: GroupBody = await _body(request, GroupBody)
    done = await request.app[SERVICES].workers.pause_running(body.filter)
    for rid in done.asked:
        _audit(request, "pause", worker=rid)
    return web.json_response(done.answer())


async def evaluate_group(request: web.Request) -> web.Response:
    body: EvaluateBody = await _body(request, EvaluateBody)
    workers = request.app[SERVICES].workers
    results = await workers.evaluate(body.expression, where=body.filter)
    for result in results:
        _audit(request, "evaluate", worker=result["id"], expression=body.expression)
    return web.json_response({"results": results})


async def snapshot(request: web.Request) -> web.Response:
    workers = await request.app[SERVICES].workers.snapshot()
    return web.json_response({"workers": workers})


def _flag(query: dict[str, str], name: str) -> bool:
    value = query.pop(name, "0").lower()
    if value not in ("0", "1", "true", "false", "yes", "no", ""):
        raise _error(web.HTTPBadRequest, f"{name} is 1 or 0, not {value[:20]!r}")
    return value in ("1", "true", "yes")


async def merged_stacks(request: web.Request) -> web.Response:
    """Every held worker's stack and every running one's, merged. ``all_threads=1``: each
    thread of the running ones; ``locals=1``: every frame's locals; ``native=1``: native
    frames; ``all_frames=1``: Ray's and Python's own frames too; ``by=pp``: merged apart
    for each coordinate along that mesh dimension too."""
    query = dict(request.query)
    by = query.pop("by", None)
    try:
        by = None if by is None else meshes.dimension(by)
    except ValueError as refused:
        raise _error(web.HTTPBadRequest, f"by: {refused}") from None
    options = stacks.StackOptions(
        all_threads=_flag(query, "all_threads"),
        locals=_flag(query, "locals"),
        native=_flag(query, "native"),
        all_frames=_flag(query, "all_frames"),
        by=by,
    )
    answer = await request.app[SERVICES].workers.stacks(_filter_in(query), options)
    return web.json_response(answer)


async def pause_worker(request: web.Request) -> web.Response:
    """Pause a worker running a task, on its node, with no ``breakpoint()`` in its code."""
    wanted = request.match_info["id"]
    _audit(request, "pause", worker=wanted)
    record = await request.app[SERVICES].workers.pause(wanted)  # pending: 202, as a kind
    return web.json_response({"paused": record.model_dump(mode="json")})


async def list_hangs(request: web.Request) -> web.Response:
    """Each watched job's verdict: ``progressing`` or ``suspected_hang`` with its stragglers."""
    return web.json_response(request.app[SERVICES].workers.hangs().answer())


async def hang_report(request: web.Request) -> web.Response:
    """The latest hang report of a job: its verdict, and where it lies on the bridge's
    machine (``.tar.gz``: the whole report, for a person on another machine)."""
    job = request.match_info["job"]
    if not re.fullmatch(r"[0-9a-fA-F]{1,64}", job):
        raise _error(web.HTTPBadRequest, "a job id is hexadecimal, at most 64 digits")
    report = request.app[SERVICES].workers.hang_report(job)
    folder = report.folder
    try:
        if request.match_info.get("archive"):
            data = await asyncio.to_thread(report.archive)
            return web.Response(body=data, content_type="application/gzip", headers={
                "Content-Disposition": f'attachment; filename="{folder.name}.tar.gz"',
            })  # fmt: skip
        verdict = await asyncio.to_thread(report.verdict)
    except (OSError, ValueError) as exc:
        raise _error(web.HTTPInternalServerError, f"cannot read {folder}: {exc}") from None
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    return web.json_response({"report": str(folder), "files": files, "verdict": verdict})


async def hang_grid(request: web.Request) -> web.Response:
    """A suspected hang's collectives as a grid: ranks (grouped where they agree) against the
    last numbers of the blamed group, the missing and the odd cells marked."""
    job = request.match_info["job"]
    if not re.fullmatch(r"[0-9a-fA-F]{1,64}", job):
        raise _error(web.HTTPBadRequest, "a job id is hexadecimal, at most 64 digits")
    grid = request.app[SERVICES].workers.hang_grid(job)
    return web.json_response(grid.model_dump(mode="json"))


async def watch_job(request: web.Request) -> web.Response:
    """Watch one more job for hangs (any job, live workers or not)."""
    body: WatchBody = await _body(request, WatchBody)
    try:
        request.app[SERVICES].workers.watch_job(body.job)
    except WorkerError as exc:
        if exc.kind is not Kind.REFUSED:
            raise
        raise _error(web.HTTPTooManyRequests, str(exc), exc.kind) from None
    _audit(request, "watch", job=body.job)
    return web.json_response({"watching": body.job})


async def list_capture_points(request: web.Request) -> web.Response:
    points = request.app[SERVICES].workers.captures.list_points()
    return web.json_response({"points": [p.model_dump(mode="json") for p in points]})


def _check_condition(condition: str | None, where: str = "") -> None:
    """A breakpoint's or capture point's condition must be a Python expression: said now, not
    by each worker it reaches."""
    if condition is None:
        return
    try:
        compile(condition, "<condition>", "eval")
    except SyntaxError as exc:
        why = f"{where}the condition is not an expression: {exc.msg}"
        raise _error(web.HTTPBadRequest, why) from None


async def set_capture_point(request: web.Request) -> web.Response:
    body: CapturePointBody = await _body(request, CapturePointBody)
    _check_condition(body.condition)
    limits = {
        k: v for k in ("interval", "most", "budget_ms") if (v := getattr(body, k)) is not None
    }
    if body.expires_in is not None:
        limits["until"] = time.time() + body.expires_in
    owner = f"{request[TOKEN].name} (HTTP)"
    point = await request.app[SERVICES].workers.captures.set_point(
        owner, body.path, body.line, condition=body.condition, rank=body.rank, ranks=body.ranks,
        job=body.job, limits=limits,
    )  # fmt: skip
    _audit(request, "set capture point", point=point.id, path=body.path, line=body.line,
           condition=body.condition)  # fmt: skip
    return web.json_response(point.model_dump(mode="json"), status=201)


async def set_line_breakpoints(request: web.Request) -> web.Response:
    """The caller's breakpoints in one file, in every live worker of the job (the page's gutter
    sends this): they replace what this token set there before, beside every other client's."""
    body: LineBreakpointsBody = await _body(request, LineBreakpointsBody)
    for asked in body.breakpoints:
        _check_condition(asked.condition, f"line {asked.line}: ")
    owner = f"{request[TOKEN].name} (HTTP)"
    lines = {b.line: b.condition for b in body.breakpoints}
    given = await request.app[SERVICES].workers.give_breakpoints(
        owner, body.path, lines, body.job, body.ranks
    )
    conditions = {line: condition for line, condition in lines.items() if condition}
    _audit(request, "set breakpoints", path=body.path, job=body.job, ranks=body.ranks,
           lines=list(lines), conditions=conditions)  # fmt: skip
    return web.json_response({"path": body.path, "workers": [
        {"id": g.worker.id, "breakpoints": g.breakpoints, "refused": g.refused,
         "unprotected": list(g.unprotected)}
        for g in given
    ]})  # fmt: skip


async def clear_capture_point(request: web.Request) -> web.Response:
    point = request.match_info["id"]
    await request.app[SERVICES].workers.captures.clear_point(point)
    _audit(request, "clear capture point", point=point)
    return web.json_response({"cleared": point})


async def show_capture_point(request: web.Request) -> web.Response:
    """One expression over the point's latest capture of each rank: side by side."""
    expression = _query(request, ShowQuery).expression
    rows = request.app[SERVICES].workers.captures.show(request.match_info["id"], expression)
    return web.json_response({"point": request.match_info["id"], "expression": expression,
                              "ranks": rows})  # fmt: skip


async def list_captures(request: web.Request) -> web.Response:
    query = _query(request, CapturesQuery)
    found = request.app[SERVICES].workers.captures.list_captures(
        job=query.job, rank=query.rank, point=query.point, kind=query.kind
    )
    return web.json_response({"captures": [c.model_dump(mode="json") for c in found]})


async def get_capture(request: web.Request) -> web.Response:
    capture = request.app[SERVICES].workers.captures.get_capture(request.match_info["id"])
    return web.json_response(capture.model_dump(mode="json"))


async def mcp(request: web.Request) -> web.StreamResponse:
    """MCP for coding agents (streamable HTTP): the tools of ``raydap.bridge.mcp``."""
    endpoint = request.app[SERVICES].mcp
    if endpoint is None:
        raise _error(web.HTTPServiceUnavailable, "this bridge serves no MCP", Kind.UNAVAILABLE)
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
        raise _error(web.HTTPTooManyRequests, refused)
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
        raise _error(
            web.HTTPForbidden, f"the token {token.name!r} may only look: use a debug token"
        )
    with _connection_slot(request):
        _audit(request, "pdb", worker=request.query.get("breakpoint", ""))
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
    app.router.add_get("/api/v1/breakpoints", list_breakpoints)
    app.router.add_get("/api/v1/breakpoints/{id}", get_breakpoint)
    app.router.add_post("/api/v1/breakpoints/{id}/continue", continue_one)
    app.router.add_post("/api/v1/continue", continue_group)
    app.router.add_post("/api/v1/evaluate", evaluate_group)
    app.router.add_get("/api/v1/snapshot", snapshot)
    app.router.add_get("/api/v1/stacks", merged_stacks)
    app.router.add_get("/api/v1/workers", list_workers)
    app.router.add_post("/api/v1/workers/{id}/pause", pause_worker)
    app.router.add_post("/api/v1/pause", pause_group)
    app.router.add_get("/api/v1/hangs", list_hangs)
    app.router.add_post("/api/v1/hangs/watch", watch_job)
    app.router.add_get("/api/v1/hangs/{job}/report", hang_report)
    app.router.add_get("/api/v1/hangs/{job}/grid", hang_grid)
    app.router.add_get(r"/api/v1/hangs/{job}/report{archive:\.tar\.gz}", hang_report)
    app.router.add_put("/api/v1/line-breakpoints", set_line_breakpoints)
    app.router.add_get("/api/v1/capture-points", list_capture_points)
    app.router.add_post("/api/v1/capture-points", set_capture_point)
    app.router.add_delete("/api/v1/capture-points/{id}", clear_capture_point)
    app.router.add_get("/api/v1/capture-points/{id}/show", show_capture_point)
    app.router.add_get("/api/v1/captures", list_captures)
    app.router.add_get("/api/v1/captures/{id}", get_capture)
    app.router.add_get("/api/v1/events", events_socket)
    app.router.add_get("/dap", dap_socket)
    app.router.add_get("/pdb", pdb_socket)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics)
    # POST only: the transport is stateless (no session to DELETE) and sends nothing unasked
    # (no stream to GET), so both get 405, as MCP allows.
    app.router.add_post(MCP_PATH, mcp)
    return app
