"""Sans-I/O Debug Adapter Protocol: bytes in, messages out. No sockets, no asyncio."""

from raydap.protocol.codec import DEFAULT_LIMITS, Decoder, Limits, encode
from raydap.protocol.commands import COMMANDS, CONTINUE_ALL, Command, Effect, Route, command
from raydap.protocol.errors import ProtocolError
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
