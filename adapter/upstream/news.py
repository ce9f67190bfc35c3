"""What a worker tells beyond debugging: a child process waiting for a client, the torch
process groups its job made, a capture taken, a capture point turned off. Its words are data:
each goes to the bridge's listener, and a bug there, or a body it cannot take, loses that
message alone, never the worker's connection."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

from raydap.protocol import Event, event
from raydap.protocol.extension import CAPTURE, CAPTURE_POINT_OFF, PROCESS_GROUPS

log = logging.getLogger(__name__)
#: A capture point's id (:mod:`...captures.points`), and how many points a worker may turn off.
POINT_ID = re.compile(r"cp-[0-9a-f]{10}")
MAX_POINTS_OFF = 256
MAX_REASON = 500


class WorkerNews:
    """One worker's news, and the bridge's listeners to it."""

    def __init__(self, name: str) -> None:
        self.name = name
        #: Told of each child process of the worker that waits for a client (debugpy's
        #: ``debugpyAttach``: the child runs no code of its own until one attaches).
        self.on_child: Callable[[int], None] | None = None
        #: Told of what a ``raydap.live`` worker says of its torch.distributed process groups
        #: as its job makes them (:mod:`raydap.live.collectives`).
        self.on_process_groups: Callable[[object], None] | None = None
        #: Told of each capture a live worker took at a capture point, or of a point it
        #: turned off (:mod:`raydap.live.captures`).
        self.on_capture: Callable[[object], None] | None = None
        #: Capture points this worker turned off, and why: told to each session that joins
        #: later, as its stops are.
        self.points_off: dict[str, str] = {}

    def take(self, name: str, body: dict[str, Any]) -> Event | None:
        """Hand one event to its listener; returns what every session of the worker is to be
        told of it, if anything (a point turned off)."""
        if name == "debugpyAttach" and self.on_child is not None:
            child = body.get("subProcessId")
            if isinstance(child, int) and not isinstance(child, bool) and child > 0:
                self._tell(self.on_child, child)
        elif name == PROCESS_GROUPS and self.on_process_groups is not None:
            self._tell(self.on_process_groups, body)
        elif name == CAPTURE:
            if self.on_capture is not None:
                self._tell(self.on_capture, body)
            return self._point_off(body.get("point"), body.get("disabled"))
        return None

    def _point_off(self, point: object, why: object) -> Event | None:
        """The sessions owning a point turned off say so: a point id of the shape the bridge
        gives, a bounded reason, and a bounded number of points."""
        if not (isinstance(point, str) and POINT_ID.fullmatch(point) and isinstance(why, str)):
            return None
        if point not in self.points_off and len(self.points_off) >= MAX_POINTS_OFF:
            return None
        self.points_off[point] = why[:MAX_REASON]
        return event(CAPTURE_POINT_OFF, {"point": point, "reason": why[:MAX_REASON]})

    def _tell(self, listener: Callable[[Any], None], body: object) -> None:
        try:
            listener(body)
        except Exception:
            log.exception("%s: a message of the worker could not be taken", self.name)
