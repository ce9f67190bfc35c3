"""Sans-I/O Debug Adapter Protocol: bytes in, messages out. No sockets, no asyncio."""

from raydap.protocol.codec import DEFAULT_LIMITS, Decoder, Limits, encode
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
    "DEFAULT_LIMITS",
    "Decoder",
    "Event",
    "Limits",
    "Message",
    "ProtocolError",
    "Request",
    "Response",
    "encode",
    "error_response",
    "event",
    "parse_message",
    "response_to",
]
