"""What one client session needs to go on in the bridge process that replaces this one.

``raydap serve --replace`` hands every worker's debugpy connection to the new process, so the
workers' own thread, frame and variable ids do not change. The editor holds the session's ids
for them, and the breakpoints it set under the session's ids. The old bridge sends both to each
client in a ``raydapReplaced`` event; a client that reconnects (``raydap dap``, the VS Code
extension) attaches to the new bridge with it as ``resume``, and the editor's ids stay good.

Clients treat it as opaque. It comes back from outside, so it is validated and bounded like any
input, and what it restores is what the session's token may do anyway (checked on attach).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

#: The bound on each list: far above any real session (ids are dropped when a worker resumes).
MAX_ITEMS = 100_000

WorkerKey = Annotated[str, Field(max_length=200)]
#: ``(worker key, the worker's id, the client's id)``.
IdTriple = tuple[WorkerKey, int, int]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SessionIds(_Strict):
    """One session's id maps (see :class:`~adapter.translate.Translation`)."""

    threads: list[IdTriple] = Field(default_factory=list, max_length=MAX_ITEMS)
    frames: list[IdTriple] = Field(default_factory=list, max_length=MAX_ITEMS)
    variables: list[IdTriple] = Field(default_factory=list, max_length=MAX_ITEMS)
    sources: list[IdTriple] = Field(default_factory=list, max_length=MAX_ITEMS)


class BreakpointList(_Strict):
    """A set request the client made last for one file (or its function breakpoints), with
    the session's ids of its breakpoints, in order."""

    command: Literal["setBreakpoints", "setFunctionBreakpoints"]
    arguments: dict[str, Any]
    ids: list[int] = Field(max_length=MAX_ITEMS)


class Configuration(_Strict):
    """Other configuration the client sent (exception filters...), replayed to workers."""

    command: str = Field(max_length=100)
    arguments: dict[str, Any]


class Resume(_Strict):
    version: Literal[1] = 1
    ids: SessionIds = SessionIds()
    breakpoints: list[BreakpointList] = Field(default_factory=list, max_length=MAX_ITEMS)
    configuration: list[Configuration] = Field(default_factory=list, max_length=1_000)
