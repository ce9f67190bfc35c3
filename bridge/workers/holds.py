"""Each worker's hold, as pure data: its phases and the transition table (as an upstream's
life is, :mod:`raydap.adapter.upstream.life`). :class:`~.holder.Holder` only carries out
what it says.

``(none)`` --found--> ``HOLDING`` --connected--> ``HELD`` --lent--> ``LENT``
--taken_back--> ``HELD``; ``HOLDING`` --failed--> ``FAILED`` --found (tried again, after
:data:`RETRY_AFTER`)--> ``HOLDING``; a connection an earlier bridge held --adopted-->
``HELD``; anything --released--> ``(none)`` (its connection closed, it is no longer paused,
its parent left, or a new bridge holds it).

A rescue (:mod:`.rescue`) is a worker found again on its new port once it failed; a hand-over
is every ``HELD`` worker ``LENT``, then released or taken back.
"""

from __future__ import annotations

import enum
from collections.abc import Callable

#: How long a worker whose hold failed is left alone before discovery may try again.
RETRY_AFTER = 5.0


class Hold(enum.Enum):
    #: Connecting to its debugpy; the handshake is under way.
    HOLDING = "holding"
    #: Its connection is handed out.
    HELD = "held"
    #: It could not be held; listed as failed with why, and tried again later.
    FAILED = "failed"
    #: Its connection is lent to a new bridge process taking over (``--replace``).
    LENT = "lent"


class Step(enum.Enum):
    FOUND = "found"
    CONNECTED = "connected"
    FAILED = "failed"
    ADOPTED = "adopted"
    LENT = "lent"
    TAKEN_BACK = "taken_back"
    RELEASED = "released"


#: What each step does in each phase (``None``: the worker is not held at all). Anything else
#: is a :class:`HoldError`: a bug in the holder, never something a worker can cause.
TRANSITIONS: dict[tuple[Hold | None, Step], Hold | None] = {
    (None, Step.FOUND): Hold.HOLDING,
    (Hold.FAILED, Step.FOUND): Hold.HOLDING,
    (Hold.HOLDING, Step.CONNECTED): Hold.HELD,
    (Hold.HOLDING, Step.FAILED): Hold.FAILED,
    (None, Step.ADOPTED): Hold.HELD,
    (Hold.HELD, Step.LENT): Hold.LENT,
    (Hold.LENT, Step.TAKEN_BACK): Hold.HELD,
    (Hold.HOLDING, Step.RELEASED): None,
    (Hold.HELD, Step.RELEASED): None,
    (Hold.LENT, Step.RELEASED): None,
    (Hold.FAILED, Step.RELEASED): None,
}


class HoldError(RuntimeError):
    """A step the table does not allow in the worker's phase."""


class Holds:
    """Each worker's phase, and since when (``clock``'s seconds)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._phases: dict[str, tuple[Hold, float]] = {}

    def of(self, rid: str) -> Hold | None:
        found = self._phases.get(rid)
        return found[0] if found else None

    def step(self, rid: str, step: Step) -> Hold | None:
        """Move ``rid`` on by ``step``; its new phase (None: no longer held at all)."""
        now = self.of(rid)
        if (now, step) not in TRANSITIONS:
            raise HoldError(f"{rid}: {step.value} while {now.value if now else 'not held'}")
        after = TRANSITIONS[now, step]
        if after is None:
            self._phases.pop(rid, None)
        else:
            self._phases[rid] = (after, self._clock())
        return after

    def may_try(self, rid: str) -> bool:
        """Whether discovery may start holding ``rid``: not held, or failed long enough ago."""
        found = self._phases.get(rid)
        if found is None:
            return True
        phase, since = found
        return phase is Hold.FAILED and self._clock() - since >= RETRY_AFTER

    def in_phase(self, phase: Hold) -> list[str]:
        return [rid for rid, (now, _) in self._phases.items() if now is phase]
