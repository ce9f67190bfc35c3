"""Sans-I/O Debug Adapter Protocol: bytes in, messages out. No sockets, no asyncio.

Each name is imported from its module when first asked for: code inside Ray workers reads
:mod:`raydap.protocol.extension`, and must not import pydantic (``messages``) with it."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from raydap.protocol.codec import DEFAULT_LIMITS, Decoder, Limits, encode
    from raydap.protocol.commands import COMMANDS, Command, Effect, Route, command
    from raydap.protocol.errors import ProtocolError
    from raydap.protocol.extension import CONTINUE_ALL
    from raydap.protocol.messages import (
        Event,
        Message,
        Request,
        Response,
        error_response,
        event,
        parse_message,
        response_to,
    )

#: The module each name of the package comes from.
_HOME = {
    **dict.fromkeys(("DEFAULT_LIMITS", "Decoder", "Limits", "encode"), "codec"),
    **dict.fromkeys(("COMMANDS", "Command", "Effect", "Route", "command"), "commands"),
    "ProtocolError": "errors",
    "CONTINUE_ALL": "extension",
    **dict.fromkeys(
        (
            "Event",
            "Message",
            "Request",
            "Response",
            "error_response",
            "event",
            "parse_message",
            "response_to",
        ),
        "messages",
    ),
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'raydap.protocol' has no attribute {name!r}")
    return getattr(importlib.import_module(f"raydap.protocol.{home}"), name)


__all__ = [
    "COMMANDS",
    "CONTINUE_ALL",
    "DEFAULT_LIMITS",
    "Command",
    "Decoder",
    "Effect",
    "Event",
    "Limits",
    "Message",
    "ProtocolError",
    "Request",
    "Response",
    "Route",
    "command",
    "encode",
    "error_response",
    "event",
    "parse_message",
    "response_to",
]
