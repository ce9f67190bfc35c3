"""The session's transition table, read as a client would meet it."""

from __future__ import annotations

import pytest

from raydap.adapter.sessions.phases import Action, Phase, step


@pytest.mark.parametrize(
    ("phase", "command", "action", "to"),
    [
        (Phase.NEW, "initialize", Action.INITIALIZE, Phase.INITIALIZED),
        (Phase.INITIALIZED, "attach", Action.ATTACH, Phase.CONFIGURING),
        (Phase.CONFIGURING, "setBreakpoints", Action.RELAY, None),
        (Phase.CONFIGURING, "configurationDone", Action.CONFIGURED, Phase.ATTACHED),
        (Phase.ATTACHED, "configurationDone", Action.CONFIGURED, None),
        (Phase.ATTACHED, "evaluate", Action.RELAY, None),
        (Phase.ATTACHED, "disconnect", Action.DISCONNECT, Phase.CLOSED),
        (Phase.INITIALIZED, "disconnect", Action.DISCONNECT, Phase.CLOSED),
    ],
)
def test_the_handshake_and_debugging(phase: Phase, command: str, action: Action, to: Phase) -> None:
    assert step(phase, command).action is action
    assert step(phase, command).to is to


@pytest.mark.parametrize(
    ("phase", "command", "why"),
    [
        (Phase.NEW, "attach", "send 'initialize' first"),
        (Phase.NEW, "launch", "send 'initialize' first"),
        (Phase.INITIALIZED, "initialize", "initialize was already sent"),
        (Phase.INITIALIZED, "evaluate", "send 'attach' first"),
        (Phase.INITIALIZED, "configurationDone", "send 'attach' first"),
        (Phase.INITIALIZED, "launch", 'use "request": "attach"'),
        (Phase.ATTACHED, "attach", "already attached"),
        (Phase.ATTACHED, "terminate", "does not kill Ray workers"),
        (Phase.CLOSED, "evaluate", "this session has ended"),
    ],
)
def test_what_is_refused_says_what_to_do(phase: Phase, command: str, why: str) -> None:
    refused = step(phase, command)
    assert refused.action is Action.REFUSE and refused.to is None
    assert why in refused.refusal
