"""The bridge's HTTP API (JSON), for the CLI, the VS Code extension and scripts."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Protocol

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from adapter import AttachError, UpstreamError
from adapter.session import Resolver
from bridge import group, websockets
from bridge.filters import WorkerFilter
from bridge.holder import Holder

MAX_BODY_BYTES = 1024 * 1024


class StatusSource(Protocol):
    def __call__(self) -> dict[str, Any]: ...


HOLDER = web.AppKey("holder", Holder)
STATUS = web.AppKey("status", StatusSource)


class ContinueBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    filter: WorkerFilter = Field(default_factory=WorkerFilter)


class EvaluateBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    expression: str = Field(min_length=1, max_length=10_000)
    filter: WorkerFilter = Field(default_factory=WorkerFilter)


def _error(status: type[web.HTTPException], text: str) -> web.HTTPException:
    return status(text=json.dumps({"error": text}), content_type="application/json")


async def _body(request: web.Request, model: type[BaseModel]) -> Any:
    raw = await request.read()
    try:
        return model.model_validate_json(raw or b"{}")
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in exc.errors()[:5]
        )
        raise _error(web.HTTPBadRequest, f"bad request body: {problems}") from None


async def list_breakpoints(request: web.Request) -> web.Response:
    holder = request.app[HOLDER]
    records = [r.model_dump(mode="json") for r in holder.registry.records()]
    return web.json_response({"breakpoints": records})


async def get_breakpoint(request: web.Request) -> web.Response:
    registry = request.app[HOLDER].registry
    try:
        record = registry.resolve(request.match_info["id"])
    except LookupError as exc:
        raise _error(web.HTTPNotFound, str(exc)) from None
    return web.json_response(record.model_dump(mode="json"))


async def continue_one(request: web.Request) -> web.Response:
    try:
        rid = await request.app[HOLDER].resume(request.match_info["id"])
    except AttachError as exc:
        raise _error(web.HTTPNotFound, str(exc)) from None
    except UpstreamError as exc:
        raise _error(web.HTTPBadGateway, str(exc)) from None
    return web.json_response({"continued": [rid]})


async def continue_group(request: web.Request) -> web.Response:
    body: ContinueBody = await _body(request, ContinueBody)
    ids = await group.continue_all(request.app[HOLDER], body.filter)
    return web.json_response({"continued": ids})


async def evaluate_group(request: web.Request) -> web.Response:
    body: EvaluateBody = await _body(request, EvaluateBody)
    results = await group.evaluate_all(request.app[HOLDER], body.expression, body.filter)
    return web.json_response({"results": results})


async def snapshot(request: web.Request) -> web.Response:
    workers = await group.snapshot(request.app[HOLDER], WorkerFilter())
    return web.json_response({"workers": workers})


async def healthz(request: web.Request) -> web.Response:
    return web.json_response(request.app[STATUS]())


def make_app(
    holder: Holder,
    status: StatusSource,
    resolve: Resolver,
    capabilities: Callable[[], dict[str, Any]],
) -> web.Application:
    app = web.Application(client_max_size=MAX_BODY_BYTES)
    app.router.add_get("/dap", lambda request: websockets.serve_dap(request, resolve, capabilities))
    app.router.add_get(
        "/api/v1/events", lambda request: websockets.serve_events(request, holder.registry)
    )
    app[HOLDER] = holder
    app[STATUS] = status
    app.router.add_get("/api/v1/breakpoints", list_breakpoints)
    app.router.add_get("/api/v1/breakpoints/{id}", get_breakpoint)
    app.router.add_post("/api/v1/breakpoints/{id}/continue", continue_one)
    app.router.add_post("/api/v1/continue", continue_group)
    app.router.add_post("/api/v1/evaluate", evaluate_group)
    app.router.add_get("/api/v1/snapshot", snapshot)
    app.router.add_get("/healthz", healthz)
    return app
