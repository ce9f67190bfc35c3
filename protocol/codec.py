"""DAP framing: ``Content-Length`` headers around JSON bodies.

:class:`Decoder` is incremental: feed it bytes in any chunking and it returns the messages they
complete. It never blocks and never buffers more than the limits allow, so a hostile peer cannot
make it hang or grow without bound.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from raydap.protocol.errors import ProtocolError
from raydap.protocol.messages import Event, Request, Response, parse_message

_HEADER_END = b"\r\n\r\n"


@dataclass(frozen=True)
class Limits:
    """Upper bounds on what one peer may send."""

    max_header_bytes: int = 8 * 1024
    max_body_bytes: int = 64 * 1024 * 1024


DEFAULT_LIMITS = Limits()


class Decoder:
    """Turns a byte stream into DAP messages."""

    def __init__(self, limits: Limits = DEFAULT_LIMITS) -> None:
        self._limits = limits
        self._buffer = bytearray()
        self._body_length: int | None = None

    @property
    def buffered(self) -> int:
        """Bytes received but not yet part of a whole message."""
        return len(self._buffer)

    def unread(self) -> bytes:
        """The bytes received but not yet part of a whole message, framed as they came (a
        header already read is written back): what another decoder, in another process, goes
        on from when a connection is handed over."""
        if self._body_length is None:
            return bytes(self._buffer)
        return b"Content-Length: %d\r\n\r\n" % self._body_length + bytes(self._buffer)

    def feed(self, data: bytes) -> list[Request | Response | Event]:
        """Add bytes; return the messages they complete, in order."""
        self._buffer += data
        messages: list[Request | Response | Event] = []
        while True:
            if self._body_length is None:
                end = self._buffer.find(_HEADER_END)
                if end < 0:
                    if len(self._buffer) > self._limits.max_header_bytes:
                        raise ProtocolError(
                            f"header block longer than {self._limits.max_header_bytes} bytes"
                        )
                    return messages
                if end > self._limits.max_header_bytes:
                    raise ProtocolError(
                        f"header block longer than {self._limits.max_header_bytes} bytes"
                    )
                self._body_length = self._parse_headers(bytes(self._buffer[:end]))
                del self._buffer[: end + len(_HEADER_END)]
            if len(self._buffer) < self._body_length:
                return messages
            body = bytes(self._buffer[: self._body_length])
            del self._buffer[: self._body_length]
            self._body_length = None
            messages.append(self._parse_body(body))

    def _parse_headers(self, block: bytes) -> int:
        length: int | None = None
        for line in block.split(b"\r\n"):
            name, sep, value = line.partition(b":")
            if not sep:
                raise ProtocolError(f"malformed header line {line[:80]!r}")
            if name.strip().lower() == b"content-length":
                text = value.strip()
                if not text.isdigit():
                    raise ProtocolError(f"Content-Length is not a number: {text[:40]!r}")
                length = int(text)
        if length is None:
            raise ProtocolError("header block without Content-Length")
        if length > self._limits.max_body_bytes:
            raise ProtocolError(
                f"message of {length} bytes is over the limit of {self._limits.max_body_bytes}"
            )
        return length

    @staticmethod
    def _parse_body(body: bytes) -> Request | Response | Event:
        try:
            data = json.loads(body)
        except (UnicodeDecodeError, ValueError) as exc:
            raise ProtocolError(f"body is not JSON: {exc}") from None
        return parse_message(data)


def encode(message: Request | Response | Event, seq: int | None = None) -> bytes:
    """One buffer holding the whole framed message, ready for a single write."""
    body = json.dumps(message.to_dict(seq), separators=(",", ":"), ensure_ascii=False).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body
