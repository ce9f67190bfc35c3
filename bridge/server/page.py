"""The web page's door: the page itself, and logging in with the token.

``raydap serve`` prints ``http://HOST:PORT/?token=...``; following it exchanges the token for an
HttpOnly, SameSite=Strict cookie and redirects to ``/``, so the secret leaves the address bar
and scripts can never read it. Without a token the page offers a login form (which posts JSON,
as every POST here must be). The page's own requests then carry the cookie; the browser
defences (Host, Origin) apply to them as to everything else.
"""

from __future__ import annotations

import json
from pathlib import Path

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from raydap.bridge.server.auth import Authenticator

COOKIE = "raydap-token"
STATIC_PREFIX = "/static/"
WEB = Path(__file__).resolve().parents[1] / "web"
AUTH = web.AppKey("page_auth", Authenticator)


class Login(BaseModel):
    model_config = ConfigDict(extra="forbid")
    token: str = Field(min_length=1, max_length=1000)


def _with_cookie(response: web.StreamResponse, request: web.Request, secret: str) -> None:
    response.set_cookie(
        COOKIE, secret, httponly=True, samesite="Strict", secure=request.secure, path="/"
    )


async def index(request: web.Request) -> web.StreamResponse:
    offered = request.query.get("token")
    if offered is not None:
        if request.app[AUTH].check(offered) is None:
            raise web.HTTPUnauthorized(text="that token is not one this bridge knows")
        redirect = web.HTTPSeeOther(location="/")
        _with_cookie(redirect, request, offered)
        raise redirect
    return web.FileResponse(WEB / "index.html", headers={"Cache-Control": "no-store"})


async def login(request: web.Request) -> web.Response:
    try:
        body = Login.model_validate_json(await request.read())
    except ValidationError:
        raise web.HTTPBadRequest(text=json.dumps({"error": 'send {"token": "..."}'})) from None
    token = request.app[AUTH].check(body.token)
    if token is None:
        raise web.HTTPUnauthorized(
            text=json.dumps({"error": "that token is not one this bridge knows"}),
            content_type="application/json",
        )
    response = web.json_response({"name": token.name, "role": token.role})
    _with_cookie(response, request, body.token)
    return response


async def logout(request: web.Request) -> web.Response:
    response = web.json_response({})
    response.del_cookie(COOKIE, path="/")
    return response


def add_routes(app: web.Application, auth: Authenticator) -> None:
    app[AUTH] = auth
    app.router.add_get("/", index)
    app.router.add_post("/api/v1/login", login)
    app.router.add_post("/api/v1/logout", logout)
    app.router.add_static(STATIC_PREFIX, WEB, show_index=False, follow_symlinks=False)
