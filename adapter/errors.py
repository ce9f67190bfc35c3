"""The one error type of what is asked of workers, raised below the doors.

A failure has a :class:`Kind` (a fact, not a phrase to parse) and a message for a person. Each
door translates the kind once: the HTTP API to a status (``bridge/server/http_api.py``), MCP
to an ``isError`` result naming it (``bridge/mcp/server.py``), a DAP session to an error reply
(``adapter/sessions/session.py``); the CLI reads the HTTP status. The classes below are the
failures of one part each (an upstream, an attach, a resume...), so a caller that expects one
names it.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError


class Kind(enum.Enum):
    """Why something asked of a worker was not done."""

    #: No such worker, or no worker matches (an id, a prefix, a filter, a frame).
    NOT_FOUND = "not_found"
    #: The worker runs, and what was asked needs it paused (continue, step, a frame's values).
    NOT_PAUSED = "not_paused"
    #: The worker is paused already (a pause asked again).
    ALREADY_PAUSED = "already_paused"
    #: The worker (its debugpy) said no, or cannot do it here (what to install or allow).
    REFUSED = "refused"
    #: The worker's connection is gone or cannot be made.
    UNREACHABLE = "unreachable"
    #: The worker did not answer in time.
    TIMED_OUT = "timed_out"
    #: The caller's token may not do this.
    FORBIDDEN = "forbidden"
    #: What was asked is not well formed (an attach's arguments, a filter).
    INVALID = "invalid"
    #: This bridge does not offer it now (the hang watch is off; a new bridge takes over).
    UNAVAILABLE = "unavailable"
    #: Asked, and not done yet: it will be (a pause of a worker that waits in native code
    #: stays requested, and takes when the call returns to Python).
    PENDING = "pending"


class WorkerError(Exception):
    """What was asked of a worker was not done; :attr:`kind` says why, the message for whom."""

    #: The kind a subclass stands for unless a raise says otherwise.
    default_kind = Kind.REFUSED

    def __init__(
        self, message: str, kind: Kind | None = None, *, worker: str | None = None
    ) -> None:
        super().__init__(message)
        self.kind = kind or self.default_kind
        #: The one worker it is about, where there is one (a door names it beside the message).
        self.worker = worker


class UpstreamError(WorkerError):
    """A request to the worker failed for a reason other than the worker's own answer."""

    default_kind = Kind.UNREACHABLE


class UpstreamClosed(UpstreamError):
    """The worker's debugpy connection is gone (the worker exited, or was detached)."""


def invalid_fields(
    exc: ValidationError,
    *,
    whole: str,
    most: int = 5,
    name: Callable[[Sequence[int | str]], str] = lambda loc: ".".join(map(str, loc)),
) -> list[str]:
    """What is wrong with input that failed validation, one line a field (``rank: Input should
    be greater than or equal to 0``), at most ``most``: every door says it alike. ``whole``
    names the input itself (an error with no field); ``name`` a field as the door calls it."""
    return [f"{name(e['loc']) if e['loc'] else whole}: {e['msg']}" for e in exc.errors()[:most]]
