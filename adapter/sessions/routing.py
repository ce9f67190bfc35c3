"""Which of a session's workers a client request is for, found from the session-wide ids
it carries (a thread, frame, variables or source reference), or the one worker shown."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from raydap.adapter.errors import Kind, WorkerError
from raydap.adapter.sessions.translate import Translation
from raydap.adapter.sessions.workers import Worker
from raydap.protocol import Request
from raydap.protocol import command as command_info


class RoutingError(WorkerError):
    """A request the mux cannot send to any worker; its message goes to the client."""

    default_kind = Kind.INVALID


def client_id(arguments: dict[str, Any], name: str) -> int:
    value = arguments.get(name)
    if not isinstance(value, int) or isinstance(value, bool):
        raise RoutingError(f"{name} must be an integer, not {value!r}")
    return value


def route(request: Request, workers: Mapping[str, Worker], ids: Translation) -> Worker:
    """The worker ``request`` is for, or RoutingError saying why there is none."""
    command = request.command
    by = command_info(command).route
    id_map = ids.ids_for(by)
    mapped: tuple[str, int] | None = None
    if id_map is not None and request.args.get(by.value) not in (None, 0):
        mapped = id_map.to_worker(client_id(request.args, by.value))
    elif len(workers) == 1:
        return next(iter(workers.values()))
    else:
        raise RoutingError(
            f"{command!r} does not say which worker it is for; select a stack frame of a "
            "paused worker first"
            if workers
            else "no paused worker in this session yet"
        )
    if mapped is None or mapped[0] not in workers:
        raise RoutingError(
            f"{command!r} names an id of a worker that has resumed or left", Kind.NOT_FOUND
        )
    return workers[mapped[0]]
