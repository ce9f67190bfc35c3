"""An upstream's life, as pure data: its phases and the transition table (h11's ``_state.py``
is the model). :class:`~raydap.adapter.upstream.connection.Upstream` only carries out what it says.

``CONNECTING`` --attached--> ``ATTACHED`` --lend--> ``LENT`` --take_back--> ``ATTACHED``
(either) --detach--> ``DETACHING``; anything --closed--> ``CLOSED``

Reading what the worker says, asking it, and whether it stands stopped (:mod:`.stops`) are
other matters: a phase says only what may be done with the connection.
"""

from __future__ import annotations

import enum


class State(enum.Enum):
    """Where a worker's debugpy stands; derived from its life and :attr:`Upstream.stops`, never kept
    beside it."""

    CONNECTING = "connecting"
    STOPPED = "stopped"
    RUNNING = "running"
    CLOSED = "closed"


class Life(enum.Enum):
    #: The socket is open; the handshake is under way and the worker has shown no stop.
    CONNECTING = "connecting"
    #: The handshake is done, or the worker has shown a stop.
    ATTACHED = "attached"
    #: ``disconnect`` sent: the connection closes once debugpy answers.
    DETACHING = "detaching"
    #: Reading stopped; the socket is lent to another bridge process (``--replace``).
    LENT = "lent"
    CLOSED = "closed"


class Happening(enum.Enum):
    ATTACHED = "attached"  # the handshake is done, a stop is shown, or it was adopted
    DETACH = "detach"
    LEND = "lend"
    TAKE_BACK = "take_back"  # a hand-over failed: this process reads again
    CLOSED = "closed"


class LifeError(Exception):
    """A happening its phase does not allow (a connection lent before it is attached)."""


#: (phase, happening) -> the phase after it. A pair not listed is not allowed.
TRANSITIONS: dict[tuple[Life, Happening], Life] = {
    (Life.CONNECTING, Happening.ATTACHED): Life.ATTACHED,
    (Life.CONNECTING, Happening.DETACH): Life.DETACHING,
    (Life.ATTACHED, Happening.ATTACHED): Life.ATTACHED,  # a later stop
    (Life.ATTACHED, Happening.DETACH): Life.DETACHING,
    (Life.ATTACHED, Happening.LEND): Life.LENT,
    (Life.LENT, Happening.TAKE_BACK): Life.ATTACHED,
    # A stop read while detaching is shown (debugpy resumes it on disconnect); it stays so.
    (Life.DETACHING, Happening.ATTACHED): Life.DETACHING,
    (Life.DETACHING, Happening.DETACH): Life.DETACHING,
    **{(life, Happening.CLOSED): Life.CLOSED for life in Life},
    # What was under way when the connection went (a stop settled, a handshake) ends there.
    **{(Life.CLOSED, happening): Life.CLOSED for happening in Happening},
}


def after(life: Life, happening: Happening) -> Life:
    """The phase ``happening`` leads to from ``life``; :class:`LifeError` if not allowed."""
    try:
        return TRANSITIONS[life, happening]
    except KeyError:
        raise LifeError(f"{happening.value} while {life.value}") from None
