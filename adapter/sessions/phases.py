"""What a client session may do when: its phases and the transition table, as pure data.

``NEW`` --initialize--> ``INITIALIZED`` --attach--> ``CONFIGURING`` --configurationDone-->
``ATTACHED`` --disconnect--> ``CLOSED``

:func:`step` tells the session what a request does in the phase it is in: which handler
answers it and the phase it leads to, or why it is refused. The session only carries it out,
so the rules are read (and tested) here, in one table.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Phase(enum.Enum):
    NEW = "new"
    INITIALIZED = "initialized"
    CONFIGURING = "configuring"
    ATTACHED = "attached"
    CLOSED = "closed"


class Action(enum.Enum):
    """Which handler of the session answers a request."""

    INITIALIZE = "initialize"
    ATTACH = "attach"  # leads to CONFIGURING only if the attach is accepted
    CONFIGURED = "configured"
    DISCONNECT = "disconnect"
    RELAY = "relay"  # to the session's workers
    REFUSE = "refuse"


@dataclass(frozen=True)
class Step:
    action: Action
    #: The phase after the request is answered (the same phase if None).
    to: Phase | None = None
    #: Why a refused request is refused, as the client is told.
    refusal: str = ""


def _refuse(why: str) -> Step:
    return Step(Action.REFUSE, refusal=why)


_ATTACHED = (Phase.CONFIGURING, Phase.ATTACHED)

#: (phase, command) -> step; commands not named here are debugging requests (see :func:`step`).
TRANSITIONS: dict[tuple[Phase, str], Step] = {
    (Phase.NEW, "initialize"): Step(Action.INITIALIZE, Phase.INITIALIZED),
    (Phase.INITIALIZED, "attach"): Step(Action.ATTACH, Phase.CONFIGURING),
    (Phase.CONFIGURING, "configurationDone"): Step(Action.CONFIGURED, Phase.ATTACHED),
    (Phase.ATTACHED, "configurationDone"): Step(Action.CONFIGURED),
    **{
        (phase, "initialize"): _refuse("initialize was already sent")
        for phase in (Phase.INITIALIZED, *_ATTACHED)
    },
    **{(phase, "attach"): _refuse("this session is already attached") for phase in _ATTACHED},
    **{
        (phase, "disconnect"): Step(Action.DISCONNECT, Phase.CLOSED)
        for phase in (Phase.INITIALIZED, *_ATTACHED)
    },
}

#: Refused in every phase, with what to do instead.
ALWAYS_REFUSED = {
    "launch": 'raydap attaches to paused Ray workers: use "request": "attach"',
    "terminate": "raydap does not kill Ray workers; continue or disconnect instead",
}


def step(phase: Phase, command: str) -> Step:
    """What ``command`` does in ``phase``."""
    if command in ALWAYS_REFUSED and phase is not Phase.NEW:
        return _refuse(ALWAYS_REFUSED[command])
    found = TRANSITIONS.get((phase, command))
    if found is not None:
        return found
    if phase is Phase.NEW:
        return _refuse("send 'initialize' first")
    if phase is Phase.INITIALIZED:
        return _refuse("send 'attach' first")
    if phase is Phase.CLOSED:
        return _refuse("this session has ended")
    return Step(Action.RELAY)
