"""The MCP server: lists the tools a caller's token may use, and answers every call.

A call is checked against its schema, refused if the token may only look and the tool does
more, audited with the token's name, given at most :data:`CALL_LIMIT_S` seconds, and answered
in small JSON; a bug in a tool becomes an error result, never a dropped request.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any, Literal, Protocol

import mcp_types as types
from mcp.server import Server, ServerRequestContext
from pydantic import ValidationError

from raydap.adapter.errors import Kind, WorkerError, invalid_fields
from raydap.bridge.mcp import catalog, fit
from raydap.bridge.mcp.desk import Desk

log = logging.getLogger(__name__)

#: The longest any call may take: the longest wait a tool allows, and a margin.
CALL_LIMIT_S = catalog.MAX_WAIT_S + 30
#: Where the HTTP layer leaves the caller's token and address in the request's ASGI scope.
TOKEN_KEY, CLIENT_KEY = "raydap.token", "raydap.client"

Audit = Callable[..., None]


class Caller(Protocol):
    """Who calls (one of the bridge's tokens): its name for the audit, its role for what it
    may do (``debug``: everything; ``view``: only what reads)."""

    @property
    def name(self) -> str: ...

    @property
    def role(self) -> str: ...


#: Told of each call that ran or was refused: ``(tool, seconds, "ok" | "error" | "refused")``.
Measure = Callable[[str, float, str], None]


def _unmeasured(tool: str, seconds: float, outcome: str) -> None:
    pass


def offered(token: Caller) -> list[catalog.Tool]:
    """The tools a token may call: a view token only those that read."""
    return [tool for tool in catalog.TOOLS if tool.reads or token.role == "debug"]


def _listing(tool: catalog.Tool) -> types.Tool:
    return types.Tool(
        name=tool.name,
        description=tool.description,
        input_schema=tool.input_schema(),
        annotations=types.ToolAnnotations(
            read_only_hint=tool.reads, destructive_hint=False, open_world_hint=False
        ),
    )


def _result(answer: dict[str, Any], *, error: bool = False) -> types.CallToolResult:
    text = fit.dumps(answer)
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)


def _caller(ctx: ServerRequestContext[Any, Any]) -> tuple[Caller, str]:
    scope = getattr(ctx.request, "scope", None) or {}
    token: Caller | None = scope.get(TOKEN_KEY)
    if token is None or token.role not in ("debug", "view"):  # the HTTP layer always sets it
        raise PermissionError("the request carries no checked token")
    return token, str(scope.get(CLIENT_KEY, "?"))


Outcome = Literal["ok", "error", "refused"]


def _failed(
    text: str, outcome: Outcome = "error", kind: Kind | None = None
) -> tuple[types.CallToolResult, Outcome]:
    body = {"error": text} | ({"kind": kind.value} if kind is not None else {})
    return _result(body, error=True), outcome


async def call(
    desk: Desk,
    token: Caller,
    client: str,
    name: str,
    arguments: dict[str, Any],
    audit: Audit,
    measure: Measure = _unmeasured,
) -> types.CallToolResult:
    """One tool call, whole: check, audit, run with a time limit, answer, measure."""
    started = time.monotonic()
    result, outcome = await _call(desk, token, client, name, arguments, audit)
    if name in catalog.BY_NAME:  # a made-up name is no label of a metric
        measure(name, time.monotonic() - started, outcome)
    return result


async def _call(
    desk: Desk, token: Caller, client: str, name: str, arguments: dict[str, Any], audit: Audit
) -> tuple[types.CallToolResult, Outcome]:
    tool = catalog.BY_NAME.get(name)
    if tool is None:
        return _failed(f"no tool {name!r}: list_tools says which there are")
    if tool not in offered(token):
        audit("mcp-refused", client=client, token=token.name, tool=name)
        return _failed(f"the token {token.name!r} may only look: {name} runs code or moves "
                       "workers and needs a debug token", "refused", Kind.FORBIDDEN)  # fmt: skip
    try:
        ask = tool.arguments.model_validate(arguments)
    except ValidationError as exc:
        problems = "; ".join(invalid_fields(exc, whole="arguments"))
        return _failed(f"bad arguments for {name}: {problems}")
    audit("mcp", client=client, token=token.name, tool=name,
          arguments=ask.model_dump(exclude_defaults=True))  # fmt: skip
    try:
        answer = await asyncio.wait_for(getattr(desk, name)(ask), CALL_LIMIT_S)
        if token.role != "debug":
            answer = desk.as_viewer_sees(name, answer)
    except WorkerError as exc:  # the MCP door's one translation: isError, with the kind
        if exc.kind is Kind.PENDING:  # asked and not done yet: an answer, not a failure
            return _result({"pending": [{"id": exc.worker, "reason": str(exc)}]}), "ok"
        return _failed(str(exc), "refused" if exc.kind is Kind.FORBIDDEN else "error", exc.kind)
    except asyncio.TimeoutError:
        return _failed(f"{name} took longer than {CALL_LIMIT_S:g} s")
    except Exception as exc:  # a bug: the agent gets an answer, the log the trace
        log.exception("MCP tool %s failed", name)
        return _failed(f"{name} failed in the bridge: {exc!r}")
    return _result(answer), "ok"


def make_server(
    desk: Desk, audit: Audit, version: str, measure: Measure = _unmeasured
) -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        token, _ = _caller(ctx)
        return types.ListToolsResult(tools=[_listing(tool) for tool in offered(token)])

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        token, client = _caller(ctx)
        arguments = dict(params.arguments or {})
        return await call(desk, token, client, params.name, arguments, audit, measure)

    return Server(
        "raydap",
        version=version,
        instructions=(
            "Debug Ray jobs: list_workers and stacks show where every worker stands; evaluate, "
            "variables and source read paused workers; set_breakpoints and wait_for_pause stop "
            "live workers where you ask; continue_workers lets them go on. Ranks of one job "
            "wait for each other in collectives: continue them together."
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
