"""DAP envelope models (request, response, event) and helpers to build replies.

Only the envelope is modelled: ``arguments`` and ``body`` stay plain JSON so that every field a
peer sends, known to this version of the schema or not, passes through unchanged.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from raydap.protocol.errors import ProtocolError


class _Envelope(BaseModel):
    model_config = ConfigDict(extra="allow")

    seq: int = Field(default=0, ge=0)

    def to_dict(self, seq: int | None = None) -> dict[str, Any]:
        """The wire form; ``seq`` overrides the stored one (each connection numbers its own)."""
        data = self.model_dump(mode="json", exclude_unset=True)
        data["seq"] = self.seq if seq is None else seq
        data["type"] = self.type  # type: ignore[attr-defined]
        return data


class Request(_Envelope):
    type: Literal["request"] = "request"
    command: str
    arguments: Any = None

    @property
    def args(self) -> dict[str, Any]:
        """The arguments as a dict (DAP allows them absent)."""
        return self.arguments if isinstance(self.arguments, dict) else {}


class Response(_Envelope):
    type: Literal["response"] = "response"
    request_seq: int
    success: bool
    command: str
    message: str | None = None
    body: Any = None


class Event(_Envelope):
    type: Literal["event"] = "event"
    event: str
    body: Any = None


Message = Annotated[Request | Response | Event, Field(discriminator="type")]
_MESSAGE = TypeAdapter(Message)


def parse_message(data: object) -> Request | Response | Event:
    """Validate one decoded JSON value as a DAP message, or raise :class:`ProtocolError`.

    A peer's ``seq`` may be 0 (the spec starts at 1, but nvim-dap for Neovim 0.7 numbers its
    first request 0 and debugpy accepts it); no reply is offered to a request without a usable
    ``seq``: it could not name what it answers."""
    try:
        return _MESSAGE.validate_python(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "message"
        fields: dict[Any, Any] = data if isinstance(data, dict) else {}
        seq, command = fields.get("seq"), fields.get("command")
        is_request = fields.get("type") == "request" and isinstance(seq, int)
        raise ProtocolError(
            f"not a DAP message: {where}: {first['msg']}",
            request_seq=seq if is_request else None,
            command=command if isinstance(command, str) else None,
        ) from None


def response_to(request: Request, body: Any = None) -> Response:
    """A successful response to ``request``."""
    response = Response(request_seq=request.seq, success=True, command=request.command)
    if body is not None:
        response.body = body
    return response


def error_response(
    request_seq: int, command: str, message: str, *, show_user: bool = True, error_id: int = 1
) -> Response:
    """A failed response whose text the client shows to the person.

    ``body.error`` is filled as well as ``message``: VS Code shows ``body.error.format`` and the
    schema requires ``body`` on an error response.
    """
    return Response(
        request_seq=request_seq,
        success=False,
        command=command,
        message=message,
        body={"error": {"id": error_id, "format": message, "showUser": show_user}},
    )


def event(name: str, body: Any = None) -> Event:
    """An event; ``body`` is left out of the wire form when None."""
    ev = Event(event=name)
    if body is not None:
        ev.body = body
    return ev
