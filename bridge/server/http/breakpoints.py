"""``/api/v1/line-breakpoints``: the caller's breakpoints in one file of a job's live workers
(the page's gutter, agents), on every rank or on a rank set."""

from __future__ import annotations

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from raydap.bridge.server.http.common import SERVICES, TOKEN, audit, check_condition, read_body
from raydap.bridge.workers.filters import RankSetText

routes = web.RouteTableDef()


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


@routes.put("/api/v1/line-breakpoints")
async def set_line_breakpoints(request: web.Request) -> web.Response:
    """The caller's breakpoints in one file, in every live worker of the job (the page's gutter
    sends this): they replace what this token set there before, beside every other client's."""
    body = await read_body(request, LineBreakpointsBody)
    for asked in body.breakpoints:
        check_condition(asked.condition, f"line {asked.line}: ")
    owner = f"{request[TOKEN].name} (HTTP)"
    lines = {b.line: b.condition for b in body.breakpoints}
    given = await request.app[SERVICES].workers.give_breakpoints(
        owner, body.path, lines, body.job, body.ranks
    )
    conditions = {line: condition for line, condition in lines.items() if condition}
    audit(request, "set breakpoints", path=body.path, job=body.job, ranks=body.ranks,
          lines=list(lines), conditions=conditions)  # fmt: skip
    return web.json_response({"path": body.path, "workers": [
        {"id": g.worker.id, "breakpoints": g.breakpoints, "refused": g.refused,
         "unprotected": list(g.unprotected)}
        for g in given
    ]})  # fmt: skip
