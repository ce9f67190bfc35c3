"""What debugpy 1.8 does that a client of the bridge must not see.

Each fix here is for something found against a real worker: requests that make pydevd drop the
worker's connection, error responses without the ``body`` the schema requires, and the note
debugpy appends to exception names in Ray's post-mortem stops.
"""

from __future__ import annotations

from typing import Any

from raydap.protocol import Event, Response
from raydap.protocol.commands import COMMANDS, Answerer
from raydap.protocol.extension import CAPTURE, PROCESS_GROUPS


def exception_line(message: str | None) -> str:
    """The exception line of a traceback: debugpy answers a failed evaluate with all of it."""
    lines = [line.strip() for line in (message or "").strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


#: debugpy's own events, meaningless to an editor talking to the bridge. ``debugpyAttach``
#: (a child process of the worker wants a client) is the bridge's to answer: an editor given
#: it would try to reach the worker's node itself. A live worker's process groups are the
#: bridge's too (:mod:`raydap.live.collectives`), and its captures (:mod:`raydap.live.captures`).
PRIVATE_EVENTS = frozenset(
    {
        "debugpyAttach",
        "debugpySockets",
        "debugpyWaitingForServer",
        "initialized",
        PROCESS_GROUPS,
        CAPTURE,
    }
)


def refusal(command: str, arguments: Any) -> str | None:
    """Why a schema-valid request must not reach debugpy, or None. debugpy 1.8 raises inside
    pydevd on these and drops the worker's connection, for every session sharing it (found by
    the session fuzzer). Nor does a request debugpy never answers (:mod:`raydap.protocol.commands`):
    its adapter would wait for pydevd's answer before it read anything else from the bridge."""
    known = COMMANDS.get(command)  # the handshake's own requests are not in the table
    if known is not None and known.answered_by in (Answerer.NOBODY, Answerer.BRIDGE):
        return f"debugpy does not answer {command!r}: the bridge does not send it to a worker"
    if command == "setBreakpoints":
        source = arguments.get("source") if isinstance(arguments, dict) else None
        if not isinstance(source, dict) or not isinstance(source.get("path"), str):
            return "debugpy sets breakpoints by file path: source.path is required"
    return None


def exception_name(text: object) -> str:
    """The exception's type name. In a post-mortem stop debugpy names it
    ``ValueError       (note: full exception trace is shown but execution is paused at: ...)``,
    which editors show as the exception's name."""
    return str(text or "").split("(note:", 1)[0].strip() or "Exception"


def mend_event(message: Event) -> Event:
    """A ``stopped`` event's exception name without debugpy's note (fresh from the wire, so
    changed in place before anyone shares it)."""
    body = message.body
    if message.event == "stopped" and isinstance(body, dict) and "(note:" in str(body.get("text")):
        body["text"] = exception_name(body["text"])
    return message


#: Return values debugpy lists (``showReturnValue``) that are Ray's, not the user's: the
#: breakpoint hook itself, which returns into the user's frame at every ``breakpoint()``.
RAY_HOOK_RETURNS = frozenset({"(return) set_trace", "(return) _debugpy_breakpoint"})


def mend_response(response: Response) -> Response:
    """An error response gets the ``body`` the schema requires (debugpy omits it); an
    ``exceptionInfo`` answer names the exception without debugpy's note; ``variables``
    leaves out the return value of Ray's breakpoint hook."""
    body = response.body
    if response.command == "variables" and isinstance(body, dict):
        listed = body.get("variables")
        if isinstance(listed, list) and any(
            isinstance(v, dict) and v.get("name") in RAY_HOOK_RETURNS for v in listed
        ):
            body["variables"] = [
                v for v in listed if not (isinstance(v, dict) and v.get("name") in RAY_HOOK_RETURNS)
            ]
    if not response.success and body is None:
        text = response.message or f"{response.command} failed"
        response.body = {"error": {"id": 0, "format": text, "showUser": True}}
    elif response.command == "exceptionInfo" and isinstance(body, dict):
        if "(note:" in str(body.get("exceptionId")):
            body["exceptionId"] = exception_name(body["exceptionId"])
        details = body.get("details")
        if isinstance(details, dict) and "(note:" in str(details.get("typeName")):
            details["typeName"] = exception_name(details["typeName"])
    return response
