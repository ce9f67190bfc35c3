"""Hostile clients against a live relay: random requests, arguments and garbage bytes.

Each example opens its own connection to the relay (a real debugpy behind it), sends what
hypothesis draws, and reads until the bridge answers or closes. Whatever it sends, the bridge
never crashes, every reply is valid DAP, and the well-behaved session next door still works.
"""

from __future__ import annotations

import asyncio
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raydap.adapter import State
from raydap.protocol import Decoder
from tests.conftest import Connect
from tests.dap_schema import schema_errors
from tests.integration.adapter.conftest import Relay

COMMANDS = ["initialize", "attach", "threads", "stackTrace", "scopes", "variables", "evaluate",
            "setBreakpoints", "source", "configurationDone", "disconnect", "launch",
            "terminate", "exceptionInfo", "nonsense"]  # fmt: skip
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
argument_names = st.sampled_from(
    ["threadId", "frameId", "variablesReference", "breakpoint", "follow", "expression",
     "source", "sourceReference", "token", "childSessions", "levels", "startFrame"]
)  # fmt: skip
requests = st.fixed_dictionaries(
    {"seq": st.integers(0, 1000), "type": st.just("request"), "command": st.sampled_from(COMMANDS)},
    optional={"arguments": st.dictionaries(argument_names, json_values, max_size=4)},
)
HANDSHAKE = [
    {"seq": 1, "type": "request", "command": "initialize", "arguments": {"adapterID": "fuzz"}},
    {"seq": 2, "type": "request", "command": "attach", "arguments": {"breakpoint": "w1"}},
    {"seq": 3, "type": "request", "command": "configurationDone"},
]


def frame(message: object) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def exchange(relay: Relay, payload: bytes) -> list[dict[str, object]]:
    """Send, then read what the bridge answers until it goes quiet or closes."""
    reader, writer = await asyncio.open_connection(relay.host, relay.port)
    writer.write(payload)
    await writer.drain()
    replies: list[dict[str, object]] = []
    decoder = Decoder()
    try:
        while data := await asyncio.wait_for(reader.read(65536), 0.3):
            replies += [m.to_dict() for m in decoder.feed(data)]
    except (asyncio.TimeoutError, ConnectionError):
        pass
    finally:
        writer.close()
    return replies


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.booleans(), st.lists(requests, min_size=1, max_size=6), st.binary(max_size=48))
async def test_random_traffic_gets_valid_replies_and_harms_nobody(
    relay: Relay, dap_connect: Connect, attach_first: bool, sent: list[dict[str, object]],
    garbage: bytes,
) -> None:  # fmt: skip
    messages = (HANDSHAKE if attach_first else []) + sent
    payload = b"".join(frame(m) for m in messages) + garbage
    for reply in await exchange(relay, payload):
        # A request numbered 0 (as old nvim-dap sends) is answered as debugpy does, naming it
        # by its own seq, which the schema's minimum of 1 does not foresee.
        errors = [e for e in schema_errors(reply) if "request_seq: 0 is less than" not in e]
        assert errors == [], reply

    # The worker is still paused and held.
    assert relay.upstream.state is State.STOPPED, (relay.upstream.close_reason, messages)
    neighbour = await dap_connect(relay.host, relay.port)
    await neighbour.attach(breakpoint="w1")
    thread_id = (await neighbour.wait_event("stopped")).body["threadId"]
    trace = await neighbour.request("stackTrace", {"threadId": thread_id})
    assert trace.body["stackFrames"][0]["name"] == "work"
    await neighbour.close()
