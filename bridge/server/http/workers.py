"""``/api/v1/breakpoints``, ``/api/v1/workers`` and group commands: the held workers, and
continue, pause and evaluate on one or a group of them."""

from __future__ import annotations

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from raydap.bridge.server.http.common import SERVICES, audit, filter_in, read_body
from raydap.bridge.workers.filters import WorkerFilter
from raydap.bridge.workers.records import RecordState

routes = web.RouteTableDef()


class GroupBody(BaseModel):
    """What names a group of workers to continue or pause."""

    model_config = ConfigDict(extra="forbid")
    filter: WorkerFilter = Field(default_factory=WorkerFilter)


class EvaluateBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    expression: str = Field(min_length=1, max_length=10_000)
    filter: WorkerFilter = Field(default_factory=WorkerFilter)


@routes.get("/api/v1/breakpoints")
async def list_breakpoints(request: web.Request) -> web.Response:
    """Paused workers (live ones only while paused: ``/api/v1/workers`` has them all)."""
    records = request.app[SERVICES].workers.records()
    paused = [
        r.model_dump(mode="json")
        for r in records
        if not (r.live and r.state == RecordState.RUNNING)
    ]
    return web.json_response({"breakpoints": paused})


@routes.get("/api/v1/breakpoints/{id}")
async def get_breakpoint(request: web.Request) -> web.Response:
    record = request.app[SERVICES].workers.record(request.match_info["id"])
    return web.json_response(record.model_dump(mode="json"))


@routes.post("/api/v1/breakpoints/{id}/continue")
async def continue_one(request: web.Request) -> web.Response:
    [rid] = await request.app[SERVICES].workers.continue_workers(request.match_info["id"])
    audit(request, "continue", worker=rid)
    return web.json_response({"continued": [rid]})


@routes.post("/api/v1/continue")
async def continue_group(request: web.Request) -> web.Response:
    body = await read_body(request, GroupBody)
    ids = await request.app[SERVICES].workers.continue_workers(where=body.filter)
    for rid in ids:
        audit(request, "continue", worker=rid)
    return web.json_response({"continued": ids})


@routes.post("/api/v1/evaluate")
async def evaluate_group(request: web.Request) -> web.Response:
    body = await read_body(request, EvaluateBody)
    workers = request.app[SERVICES].workers
    results = await workers.evaluate(body.expression, where=body.filter)
    for result in results:
        audit(request, "evaluate", worker=result["id"], expression=body.expression)
    return web.json_response({"results": results})


@routes.get("/api/v1/snapshot")
async def snapshot(request: web.Request) -> web.Response:
    workers = await request.app[SERVICES].workers.snapshot()
    return web.json_response({"workers": workers})


@routes.get("/api/v1/workers")
async def list_workers(request: web.Request) -> web.Response:
    """Every held worker, running or paused, by the same ids as ``/api/v1/breakpoints``;
    a filter in the query (``?ranks=tp=1``) keeps those it matches."""
    where = filter_in(dict(request.query))
    held = [r for r in request.app[SERVICES].workers.held() if where.matches(r)]
    return web.json_response({"workers": [r.model_dump(mode="json") for r in held]})


@routes.post("/api/v1/workers/{id}/pause")
async def pause_worker(request: web.Request) -> web.Response:
    """Pause a worker running a task, on its node, with no ``breakpoint()`` in its code."""
    wanted = request.match_info["id"]
    audit(request, "pause", worker=wanted)
    record = await request.app[SERVICES].workers.pause(wanted)  # pending: 202, as a kind
    return web.json_response({"paused": record.model_dump(mode="json")})


@routes.post("/api/v1/pause")
async def pause_group(request: web.Request) -> web.Response:
    """Pause every held worker of a filter that runs (live workers), through its debugpy."""
    body = await read_body(request, GroupBody)
    done = await request.app[SERVICES].workers.pause_running(body.filter)
    for rid in done.asked:
        audit(request, "pause", worker=rid)
    return web.json_response(done.answer())
