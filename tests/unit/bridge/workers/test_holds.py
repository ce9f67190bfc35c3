"""A worker's hold as a table, without sockets: what each step does in each phase."""

from __future__ import annotations

import pytest

from raydap.bridge.workers.holds import RETRY_AFTER, TRANSITIONS, Hold, HoldError, Holds, Step


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_worker_is_found_held_lent_taken_back_and_released() -> None:
    holds = Holds(Clock())
    assert holds.may_try("w") and holds.of("w") is None
    assert holds.step("w", Step.FOUND) is Hold.HOLDING and not holds.may_try("w")
    assert holds.in_phase(Hold.HOLDING) == ["w"]
    assert holds.step("w", Step.CONNECTED) is Hold.HELD
    assert holds.step("w", Step.LENT) is Hold.LENT
    assert holds.step("w", Step.TAKEN_BACK) is Hold.HELD
    assert holds.step("w", Step.RELEASED) is None and holds.of("w") is None


def test_a_failed_hold_is_tried_again_only_after_a_while() -> None:
    clock = Clock()
    holds = Holds(clock)
    holds.step("w", Step.FOUND)
    assert holds.step("w", Step.FAILED) is Hold.FAILED
    clock.now += RETRY_AFTER - 0.1
    assert not holds.may_try("w")  # discovery leaves it alone
    clock.now += 0.2
    assert holds.may_try("w")
    assert holds.step("w", Step.FOUND) is Hold.HOLDING  # a rescue: found again


def test_an_adopted_worker_is_held_at_once() -> None:
    holds = Holds(Clock())
    assert holds.step("w", Step.ADOPTED) is Hold.HELD


@pytest.mark.parametrize(
    ("before", "step"),
    [(None, Step.CONNECTED), (Hold.HELD, Step.FOUND), (Hold.HELD, Step.FAILED),
     (Hold.FAILED, Step.LENT), (None, Step.RELEASED), (Hold.LENT, Step.FOUND)],
)  # fmt: skip
def test_a_step_the_table_does_not_allow_is_a_bug_said_as_such(
    before: Hold | None, step: Step
) -> None:
    assert (before, step) not in TRANSITIONS
    holds = Holds(Clock())
    path = {
        Hold.HOLDING: [Step.FOUND],
        Hold.HELD: [Step.ADOPTED],
        Hold.FAILED: [Step.FOUND, Step.FAILED],
        Hold.LENT: [Step.ADOPTED, Step.LENT],
    }
    for taken in path.get(before, []) if before else []:
        holds.step("w", taken)
    assert holds.of("w") is before
    with pytest.raises(HoldError, match=step.value):
        holds.step("w", step)
    assert holds.of("w") is before  # unchanged
