"""An upstream's life, read from its table alone (no socket): what may happen in each phase."""

from __future__ import annotations

import pytest

from raydap.adapter.upstream.life import Happening, Life, LifeError, after


def walk(*happenings: Happening, start: Life = Life.CONNECTING) -> Life:
    life = start
    for happening in happenings:
        life = after(life, happening)
    return life


def test_a_worker_is_attached_lent_taken_back_and_detached() -> None:
    assert walk(Happening.ATTACHED) is Life.ATTACHED
    assert walk(Happening.ATTACHED, Happening.ATTACHED) is Life.ATTACHED  # a later stop
    assert walk(Happening.ATTACHED, Happening.LEND) is Life.LENT
    assert walk(Happening.ATTACHED, Happening.LEND, Happening.TAKE_BACK) is Life.ATTACHED
    assert walk(Happening.ATTACHED, Happening.DETACH) is Life.DETACHING
    assert walk(Happening.DETACH) is Life.DETACHING  # a handshake given up
    # A stop shown while detaching does not undo the detach.
    assert walk(Happening.ATTACHED, Happening.DETACH, Happening.ATTACHED) is Life.DETACHING


@pytest.mark.parametrize("life", list(Life))
def test_every_phase_can_close_and_a_closed_connection_stays_closed(life: Life) -> None:
    assert after(life, Happening.CLOSED) is Life.CLOSED
    for happening in Happening:
        assert after(Life.CLOSED, happening) is Life.CLOSED


@pytest.mark.parametrize(
    ("life", "happening"),
    [
        (Life.CONNECTING, Happening.LEND),  # only an attached connection is handed over
        (Life.DETACHING, Happening.LEND),
        (Life.ATTACHED, Happening.TAKE_BACK),  # nothing was lent
        (Life.LENT, Happening.ATTACHED),  # a lent connection is not read
        (Life.LENT, Happening.DETACH),  # it goes on in the other process
        (Life.DETACHING, Happening.TAKE_BACK),
    ],
)
def test_what_a_phase_does_not_allow_is_refused_with_both_names(
    life: Life, happening: Happening
) -> None:
    with pytest.raises(LifeError, match=f"{happening.value} while {life.value}"):
        after(life, happening)
