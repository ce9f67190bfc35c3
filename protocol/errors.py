"""The one error type the protocol layer raises."""

from __future__ import annotations


class ProtocolError(Exception):
    """Input that is not valid DAP, or breaks a limit.

    The connection that sent it cannot be trusted to stay in sync and must be closed. When the
    offending bytes were still a parseable request, ``request_seq`` and ``command`` say which,
    so the caller can answer with an error response before closing.
    """

    def __init__(self, message: str, *, request_seq: int | None = None, command: str | None = None):
        super().__init__(message)
        self.request_seq = request_seq
        self.command = command
