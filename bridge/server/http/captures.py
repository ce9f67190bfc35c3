"""``/api/v1/capture-points`` and ``/api/v1/captures``: points that record ranks without
stopping them, and what they recorded."""

from __future__ import annotations

import time
from typing import Annotated

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, field_validator

from raydap.bridge.captures.store import CaptureKind
from raydap.bridge.server.http.common import (
    SERVICES,
    TOKEN,
    audit,
    check_condition,
    read_body,
    read_query,
)
from raydap.bridge.workers.filters import RankSetText

routes = web.RouteTableDef()


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


@routes.get("/api/v1/capture-points")
async def list_capture_points(request: web.Request) -> web.Response:
    points = request.app[SERVICES].workers.captures.list_points()
    return web.json_response({"points": [p.model_dump(mode="json") for p in points]})


@routes.post("/api/v1/capture-points")
async def set_capture_point(request: web.Request) -> web.Response:
    body = await read_body(request, CapturePointBody)
    check_condition(body.condition)
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
    audit(request, "set capture point", point=point.id, path=body.path, line=body.line,
          condition=body.condition)  # fmt: skip
    return web.json_response(point.model_dump(mode="json"), status=201)


@routes.delete("/api/v1/capture-points/{id}")
async def clear_capture_point(request: web.Request) -> web.Response:
    point = request.match_info["id"]
    await request.app[SERVICES].workers.captures.clear_point(point)
    audit(request, "clear capture point", point=point)
    return web.json_response({"cleared": point})


@routes.get("/api/v1/capture-points/{id}/show")
async def show_capture_point(request: web.Request) -> web.Response:
    """One expression over the point's latest capture of each rank: side by side."""
    expression = read_query(request, ShowQuery).expression
    rows = request.app[SERVICES].workers.captures.show(request.match_info["id"], expression)
    return web.json_response({"point": request.match_info["id"], "expression": expression,
                              "ranks": rows})  # fmt: skip


@routes.get("/api/v1/captures")
async def list_captures(request: web.Request) -> web.Response:
    query = read_query(request, CapturesQuery)
    found = request.app[SERVICES].workers.captures.list_captures(
        job=query.job, rank=query.rank, point=query.point, kind=query.kind
    )
    return web.json_response({"captures": [c.model_dump(mode="json") for c in found]})


@routes.get("/api/v1/captures/{id}")
async def get_capture(request: web.Request) -> web.Response:
    capture = request.app[SERVICES].workers.captures.get_capture(request.match_info["id"])
    return web.json_response(capture.model_dump(mode="json"))
