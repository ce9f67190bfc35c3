"""What each DAP request is: the one table that auth, audit, the cache and routing all read.

A debugpy socket runs any code it is sent, so what a request may do decides who may send it
(a ``view`` token only what reads), whether it is audited (everything that does more than
read), whether its answer holds for the length of a stop (the cache), and which worker of a
session it goes to (the id it names, or every worker for configuration). A command missing from
the table is treated as the most dangerous kind: it runs code, and goes to a worker only when
the session shows exactly one.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from raydap.protocol.extension import CONTINUE_ALL


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

    @property
    def read_only(self) -> bool:
        """What a ``view`` token may send; everything else is also audited."""
        return self.effect is Effect.READS


_R, _C, _M = Effect.READS, Effect.RUNS_CODE, Effect.MOVES

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
        Command("dataBreakpointInfo", _R, Route.VARIABLES),
        Command("gotoTargets", _R, Route.ONLY_WORKER),
        Command("breakpointLocations", _R, Route.ONLY_WORKER),
        Command("loadedSources", _R, Route.ONLY_WORKER),
        Command("modules", _R, Route.ONLY_WORKER),
        Command("readMemory", _R, Route.ONLY_WORKER),
        Command("disassemble", _R, Route.ONLY_WORKER),
        Command("locations", _R, Route.ONLY_WORKER),
        Command("evaluate", _C, Route.FRAME, writes_variables=True),
        Command("completions", _C, Route.FRAME),
        Command("setExpression", _C, Route.FRAME, writes_variables=True),
        Command("setVariable", _C, Route.VARIABLES, writes_variables=True),
        Command("writeMemory", _C, Route.ONLY_WORKER),
        Command("setBreakpoints", _C, Route.BROADCAST),
        Command("setFunctionBreakpoints", _C, Route.BROADCAST),
        Command("setExceptionBreakpoints", _C, Route.BROADCAST),
        Command("setDataBreakpoints", _C, Route.BROADCAST),
        Command("setInstructionBreakpoints", _C, Route.BROADCAST),
        Command("continue", _M, Route.THREAD, resumes=True),
        Command("next", _M, Route.THREAD, resumes=True),
        Command("stepIn", _M, Route.THREAD, resumes=True),
        Command("stepOut", _M, Route.THREAD, resumes=True),
        Command("stepBack", _M, Route.THREAD, resumes=True),
        Command("reverseContinue", _M, Route.THREAD, resumes=True),
        Command("goto", _M, Route.THREAD, resumes=True),
        Command("pause", _M, Route.THREAD),
        Command("restartFrame", _M, Route.FRAME),
        Command(CONTINUE_ALL, _M, Route.BROADCAST),
    )
}


def command(name: str) -> Command:
    """The table's entry for ``name``; an unknown command is taken to run code."""
    found = COMMANDS.get(name)
    return found if found is not None else Command(name, Effect.RUNS_CODE, Route.ONLY_WORKER)
