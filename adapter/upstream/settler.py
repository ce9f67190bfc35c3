"""Stops moved out of Ray's breakpoint hook before anyone sees them, as pure state.

On Python 3.12+ a worker's ``breakpoint()`` stops inside Ray's hook, and pydevd may nest a
post-mortem stop inside itself (:mod:`.ray_hook`). The upstream asks the stack, and this says
what to do: show the stop, step out of the hook, or re-arm the real post-mortem stop. A step
or a re-arm is answered by a new ``stopped`` event for the same thread, which comes back here
until the thread stands in the user's code; then the stop to show is the first one (a
``breakpoint()``'s reason) or the last (the real post-mortem stop). No I/O: the upstream sends
what this decides, and the rules are tested without a worker.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from raydap.adapter.upstream.ray_hook import (
    MAX_SETTLE_STEPS,
    Settle,
    may_stop_in_hook,
    settle_action,
)
from raydap.protocol import Event


@dataclass(frozen=True)
class Settling:
    """One thread's stop on its way out of the hook."""

    #: The event to show once it is done (None: show the next stop as it comes).
    shown: Event | None
    #: How many steps it took so far.
    steps: int


class Settler:
    """The threads whose stop is being settled, and what each next stop of theirs needs."""

    def __init__(self) -> None:
        self._threads: dict[int, Settling] = {}

    def __bool__(self) -> bool:
        """Whether a stop is being settled (the connection is not quiet)."""
        return bool(self._threads)

    def takes(self, thread_id: object, body: dict[str, Any], in_hook: bool | None) -> bool:
        """Whether a fresh stop is settled before it is shown: one on its way out of the hook,
        or one Ray's hook may have made, unless this worker is known not to stop there."""
        if not isinstance(thread_id, int):
            return False
        return thread_id in self._threads or (in_hook is not False and may_stop_in_hook(body))

    def begin(self, thread_id: int, message: Event) -> Settling:
        """A stop to settle: where this thread's settling stands (a fresh one: at ``message``)."""
        return self._threads.pop(thread_id, None) or Settling(message, 0)

    @staticmethod
    def plan(settling: Settling, frames: Sequence[dict[str, Any]]) -> Settle:
        """What the stop whose stack starts with ``frames`` needs; shown as it is after
        :data:`MAX_SETTLE_STEPS` steps, so that a hook of an unknown shape never hides it."""
        return settle_action(frames) if settling.steps < MAX_SETTLE_STEPS else Settle.SHOW

    def moving(self, thread_id: int, settling: Settling, action: Settle) -> None:
        """The thread is stepped (``STEP``: show the ``breakpoint()`` stop when it stands) or
        re-armed and continued (``REARM``: show the real stop that comes next)."""
        shown = settling.shown if action is Settle.STEP else None
        self._threads[thread_id] = Settling(shown, settling.steps + 1)

    def drop(self, thread_id: int) -> None:
        """The move failed or the connection went: its stop is shown as it is, or not at all."""
        self._threads.pop(thread_id, None)
