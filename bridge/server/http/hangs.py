"""``/api/v1/stacks`` and ``/api/v1/hangs``: every rank's stack merged, and the hang watch's
verdicts, reports and grids."""

from __future__ import annotations

import asyncio

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from raydap.adapter.errors import Kind, WorkerError
from raydap.bridge.hangs import stacks
from raydap.bridge.server.http.common import (
    SERVICES,
    audit,
    error,
    filter_in,
    flag,
    job_in_path,
    read_body,
)
from raydap.bridge.workers import meshes

routes = web.RouteTableDef()


class WatchBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    job: str = Field(min_length=1, max_length=64, pattern=r"^[0-9a-fA-F]+$")


@routes.get("/api/v1/stacks")
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
        raise error(web.HTTPBadRequest, f"by: {refused}") from None
    options = stacks.StackOptions(
        all_threads=flag(query, "all_threads"),
        locals=flag(query, "locals"),
        native=flag(query, "native"),
        all_frames=flag(query, "all_frames"),
        by=by,
    )
    answer = await request.app[SERVICES].workers.stacks(filter_in(query), options)
    return web.json_response(answer)


@routes.get("/api/v1/hangs")
async def list_hangs(request: web.Request) -> web.Response:
    """Each watched job's verdict: ``progressing`` or ``suspected_hang`` with its stragglers."""
    return web.json_response(request.app[SERVICES].workers.hangs.verdicts().answer())


@routes.post("/api/v1/hangs/watch")
async def watch_job(request: web.Request) -> web.Response:
    """Watch one more job for hangs (any job, live workers or not)."""
    body = await read_body(request, WatchBody)
    try:
        request.app[SERVICES].workers.hangs.watch_job(body.job)
    except WorkerError as exc:
        if exc.kind is not Kind.REFUSED:
            raise
        raise error(web.HTTPTooManyRequests, str(exc), exc.kind) from None
    audit(request, "watch", job=body.job)
    return web.json_response({"watching": body.job})


@routes.get("/api/v1/hangs/{job}/report")
async def hang_report(request: web.Request) -> web.Response:
    """The latest hang report of a job: its verdict, and where it lies on the bridge's
    machine (``.tar.gz``: the whole report, for a person on another machine)."""
    report = request.app[SERVICES].workers.hangs.report(job_in_path(request))
    folder = report.folder
    try:
        if request.match_info.get("archive"):
            data = await asyncio.to_thread(report.archive)
            return web.Response(body=data, content_type="application/gzip", headers={
                "Content-Disposition": f'attachment; filename="{folder.name}.tar.gz"',
            })  # fmt: skip
        verdict = await asyncio.to_thread(report.verdict)
    except (OSError, ValueError) as exc:
        raise error(web.HTTPInternalServerError, f"cannot read {folder}: {exc}") from None
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    return web.json_response({"report": str(folder), "files": files, "verdict": verdict})


@routes.get("/api/v1/hangs/{job}/grid")
async def hang_grid(request: web.Request) -> web.Response:
    """A suspected hang's collectives as a grid: ranks (grouped where they agree) against the
    last numbers of the blamed group, the missing and the odd cells marked."""
    grid = request.app[SERVICES].workers.hangs.grid(job_in_path(request))
    return web.json_response(grid.model_dump(mode="json"))


routes.get(r"/api/v1/hangs/{job}/report{archive:\.tar\.gz}")(hang_report)
