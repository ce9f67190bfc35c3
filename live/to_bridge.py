"""A live worker and the bridge, on the debug connection the bridge holds: events out, and
raydap's own requests in.

pydevd's writer thread sends what is queued to debugpy's adapter, which relays an event it does
not know to its client: the bridge. Queuing is safe from any thread and never blocks; with no
client connected (the bridge is being replaced) there is no writer and the event is dropped.
debugpy's adapter relays a request it does not know to pydevd, which runs the handler
:func:`answer_requests` gives it on its reader thread: it answers while the main thread is
busy or blocked (in a collective, which releases the GIL).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

_lock = threading.Lock()


def send_event(event: str, body: dict[str, Any]) -> bool:
    """Queue ``event`` for the bridge; False when no debugger client is connected."""
    import pydevd  # type: ignore[import-not-found]
    from _pydevd_bundle.pydevd_comm_constants import CMD_RETURN  # type: ignore[import-not-found]
    from _pydevd_bundle.pydevd_net_command import NetCommand  # type: ignore[import-not-found]

    writer = getattr(pydevd.get_global_debugger(), "writer", None)
    if writer is None:
        return False
    with _lock:
        message = {"type": "event", "event": event, "body": body}
        writer.add_command(NetCommand(CMD_RETURN, 0, message, is_json=True))
    return True


def answer_requests(command: str, answer: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """Teach this worker's pydevd to answer ``command`` with ``answer(arguments)`` as the body;
    an exception in it is an error response (every request gets an answer)."""
    from _pydevd_bundle._debug_adapter import (  # type: ignore[import-not-found]
        pydevd_base_schema as schema,
    )
    from _pydevd_bundle.pydevd_comm_constants import CMD_RETURN
    from _pydevd_bundle.pydevd_net_command import NetCommand
    from _pydevd_bundle.pydevd_process_net_command_json import (  # type: ignore[import-not-found]
        PyDevJsonCommandProcessor,
    )

    def on_request(processor: Any, py_db: Any, request: _Request) -> Any:
        response: dict[str, Any] = {"type": "response", "request_seq": request.seq,
                                    "command": request.command, "success": True}  # fmt: skip
        try:
            response["body"] = answer(request.arguments)
        except Exception as exc:  # every request gets an answer
            response.update(success=False, message=f"{type(exc).__name__}: {exc}", body={})
        return NetCommand(CMD_RETURN, 0, response, is_json=True)

    schema._requests_to_types[command] = _Request
    setattr(PyDevJsonCommandProcessor, f"on_{command.lower()}_request", on_request)


class _Request:
    """What pydevd's schema makes of one of raydap's requests (it builds one class per
    command)."""

    def __init__(
        self,
        command: str = "",
        seq: int = -1,
        type: str = "request",
        arguments: Any = None,
        update_ids_from_dap: bool = False,
        **_: Any,
    ) -> None:
        self.command, self.seq, self.type = command, seq, type
        self.arguments: dict[str, Any] = arguments if isinstance(arguments, dict) else {}

    def to_dict(self, update_ids_to_dap: bool = False) -> dict[str, Any]:
        return {"type": self.type, "command": self.command, "seq": self.seq,
                "arguments": self.arguments}  # fmt: skip
