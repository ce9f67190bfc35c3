"""What each DAP request is: the one table that auth, audit, the cache and routing all read.

A debugpy socket runs any code it is sent, so what a request may do decides who may send it
(a ``view`` token only what reads), whether it is audited (everything that does more than
read), whether its answer holds for the length of a stop (the cache), and which worker of a
session it goes to (the id it names, or every worker for configuration). A command missing from
the table is treated as the most dangerous kind: it runs code, and goes to a worker only when
the session shows exactly one, and it never reaches a worker at all (:attr:`Command.answered_by`).

Who answers a request matters as much as what it does: debugpy's adapter handles one request
of a connection at a time, and waits for pydevd's answer before it reads the next. A request
pydevd has no handler for is never answered, so one ``loadedSources`` would freeze the worker for
every session sharing it. Only what debugpy answers is forwarded; the bridge refuses the rest.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from raydap.protocol.extension import COLLECTIVES, CONTINUE_ALL, STACKS


class Effect(enum.Enum):
    """What a request does to the worker it reaches."""

    #: Looks only: lists, stacks, variables, sources.
    READS = "reads"
    #: Runs code in the worker or changes its state (evaluate, setVariable, and breakpoints,
    #: whose conditions and log messages are code and which pause the worker).
    RUNS_CODE = "runs code"
    #: Resumes, steps or pauses the worker.
    MOVES = "moves"


class Route(enum.Enum):
    """How a session with several workers finds the one a request is for."""

    THREAD = "threadId"
    FRAME = "frameId"
    VARIABLES = "variablesReference"
    SOURCE = "sourceReference"
    #: Configuration: it reaches every worker of the session, now and when one joins later.
    BROADCAST = "broadcast"
    #: Names no worker: it goes to the session's only worker, or is refused.
    ONLY_WORKER = "only worker"


class Answerer(enum.Enum):
    """Who answers a request: only what debugpy answers may be sent to a worker by a client."""

    #: debugpy (its adapter, or pydevd behind it): relayed to the worker.
    DEBUGPY = "debugpy"
    #: The bridge's session itself (raydap's own requests from clients): never forwarded.
    BRIDGE = "bridge"
    #: ``raydap.live`` in a live worker, asked by the bridge alone: refused from clients.
    RAYDAP_LIVE = "raydap.live"
    #: Nobody: debugpy 1.8 has no handler and would never answer. Refused by the bridge.
    NOBODY = "nobody"


@dataclass(frozen=True)
class Command:
    name: str
    effect: Effect
    route: Route
    #: Its answer holds while the worker stays stopped (one trip serves every client).
    cacheable: bool = False
    #: Sets the worker running when it succeeds (its stops end).
    resumes: bool = False
    #: May change variables of a stopped worker, so cached variables no longer hold.
    writes_variables: bool = False
    #: Who answers it (checked against the installed debugpy by :mod:`raydap.live.compat`).
    answered_by: Answerer = Answerer.DEBUGPY

    @property
    def debugpy_answers(self) -> bool:
        """Whether it may reach a worker's debugpy at all."""
        return self.answered_by is Answerer.DEBUGPY

    @property
    def from_clients(self) -> bool:
        """Whether a client may send it (raydap's worker requests are the bridge's alone)."""
        return self.answered_by in (Answerer.DEBUGPY, Answerer.BRIDGE)

    @property
    def read_only(self) -> bool:
        """What a ``view`` token may send; everything else is also audited."""
        return self.effect is Effect.READS


_R, _C, _M = Effect.READS, Effect.RUNS_CODE, Effect.MOVES
_NOBODY = Answerer.NOBODY

COMMANDS: dict[str, Command] = {
    c.name: c
    for c in (
        Command("threads", _R, Route.ONLY_WORKER, cacheable=True),
        Command("stackTrace", _R, Route.THREAD, cacheable=True),
        Command("exceptionInfo", _R, Route.THREAD, cacheable=True),
        Command("scopes", _R, Route.FRAME, cacheable=True),
        Command("variables", _R, Route.VARIABLES, cacheable=True),
        Command("source", _R, Route.SOURCE, cacheable=True),
        Command("stepInTargets", _R, Route.FRAME),
        Command("dataBreakpointInfo", _R, Route.VARIABLES, answered_by=_NOBODY),
        Command("gotoTargets", _R, Route.ONLY_WORKER),
        Command("breakpointLocations", _R, Route.ONLY_WORKER, answered_by=_NOBODY),
        Command("loadedSources", _R, Route.ONLY_WORKER, answered_by=_NOBODY),
        Command("modules", _R, Route.ONLY_WORKER),
        Command("pydevdSystemInfo", _R, Route.ONLY_WORKER),
        Command("debugpySystemInfo", _R, Route.ONLY_WORKER),
        Command("readMemory", _R, Route.ONLY_WORKER, answered_by=_NOBODY),
        Command("disassemble", _R, Route.ONLY_WORKER, answered_by=_NOBODY),
        Command("locations", _R, Route.ONLY_WORKER, answered_by=_NOBODY),
        Command("evaluate", _C, Route.FRAME, writes_variables=True),
        Command("completions", _C, Route.FRAME),
        Command("setExpression", _C, Route.FRAME, writes_variables=True),
        Command("setVariable", _C, Route.VARIABLES, writes_variables=True),
        Command("writeMemory", _C, Route.ONLY_WORKER, answered_by=_NOBODY),
        Command("setBreakpoints", _C, Route.BROADCAST),
        Command("setFunctionBreakpoints", _C, Route.BROADCAST),
        Command("setExceptionBreakpoints", _C, Route.BROADCAST),
        Command("setDebuggerProperty", _C, Route.ONLY_WORKER),
        Command("setDataBreakpoints", _C, Route.BROADCAST, answered_by=_NOBODY),
        Command("setInstructionBreakpoints", _C, Route.BROADCAST, answered_by=_NOBODY),
        Command("continue", _M, Route.THREAD, resumes=True),
        Command("next", _M, Route.THREAD, resumes=True),
        Command("stepIn", _M, Route.THREAD, resumes=True),
        Command("stepOut", _M, Route.THREAD, resumes=True),
        Command("stepBack", _M, Route.THREAD, resumes=True, answered_by=_NOBODY),
        Command("reverseContinue", _M, Route.THREAD, resumes=True, answered_by=_NOBODY),
        Command("goto", _M, Route.THREAD, resumes=True),
        Command("pause", _M, Route.THREAD),
        Command("restartFrame", _M, Route.FRAME, answered_by=_NOBODY),
        Command("restart", _M, Route.ONLY_WORKER, answered_by=_NOBODY),
        Command("terminateThreads", _M, Route.ONLY_WORKER, answered_by=_NOBODY),
        # Cancels another request: pydevd answers neither it nor what it names.
        Command("cancel", _R, Route.ONLY_WORKER, answered_by=_NOBODY),
        Command(CONTINUE_ALL, _M, Route.BROADCAST, answered_by=Answerer.BRIDGE),
        Command(COLLECTIVES, _C, Route.ONLY_WORKER, answered_by=Answerer.RAYDAP_LIVE),
        Command(STACKS, _R, Route.ONLY_WORKER, answered_by=Answerer.RAYDAP_LIVE),
    )
}


def command(name: str) -> Command:
    """The table's entry for ``name``; an unknown command is taken to run code, and is answered
    by nobody: the bridge refuses it rather than wait on debugpy for an answer."""
    found = COMMANDS.get(name)
    if found is not None:
        return found
    return Command(name, Effect.RUNS_CODE, Route.ONLY_WORKER, answered_by=Answerer.NOBODY)


#: Requests debugpy 1.8 has no handler for: never sent to a worker.
UNANSWERED = frozenset(c.name for c in COMMANDS.values() if c.answered_by is Answerer.NOBODY)


def refusal(name: str) -> str | None:
    """Why a client's request is answered by the bridge with an error and sent nowhere, or
    None when it may go on (to debugpy, or to the bridge's own handler)."""
    found = command(name)
    if found.from_clients:
        return None
    if found.answered_by is Answerer.RAYDAP_LIVE:
        return f"{name!r} is raydap's own request from the bridge to its workers, not a client's"
    if name not in COMMANDS:
        return f"raydap does not know the request {name!r}, so it is sent to no worker"
    return (
        f"debugpy does not support {name!r} (it would never answer, and the worker would wait "
        "for that answer before any other session's request): the bridge sends it to no worker"
    )
