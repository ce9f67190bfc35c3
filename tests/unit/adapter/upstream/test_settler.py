"""The settler's rules, without a worker: which stops are settled, which stop is shown once a
thread stands in the user's code, and that an unknown hook never hides a stop."""

from __future__ import annotations

from raydap.adapter.upstream.ray_hook import MAX_SETTLE_STEPS, Settle
from raydap.adapter.upstream.settler import Settler
from raydap.protocol import event
from tests.unit.adapter.upstream.test_ray_hook import SITE, USER, frame

IN_HOOK = [frame("set_trace", f"{SITE}/ray/util/rpdb.py", 299), USER]
NESTED = [
    frame("helper", "/usr/lib/python3.12/contextlib.py", 301),
    frame("_debugpy_excepthook", f"{SITE}/ray/util/debugpy.py", 126),
]


def stopped(reason: str, thread: int = 1) -> dict[str, object]:
    return {"reason": reason, "threadId": thread}


def test_a_breakpoint_stepped_out_of_the_hook_is_shown_with_its_own_reason() -> None:
    settler = Settler()
    first = event("stopped", stopped("breakpoint"))
    assert settler.takes(1, stopped("breakpoint"), in_hook=None)

    settling = settler.begin(1, first)
    assert settler.plan(settling, IN_HOOK) is Settle.STEP
    settler.moving(1, settling, Settle.STEP)
    assert settler  # not quiet: the step's stop is awaited

    # The step's stop (reason "step", which alone would not be settled) comes back here.
    assert settler.takes(1, stopped("step"), in_hook=True)
    after_step = settler.begin(1, event("stopped", stopped("step")))
    assert settler.plan(after_step, [USER]) is Settle.SHOW
    assert after_step.shown is first  # the breakpoint() stop is what clients see
    assert not settler


def test_a_nested_post_mortem_stop_shows_the_real_one_that_follows() -> None:
    settler = Settler()
    settling = settler.begin(1, event("stopped", stopped("exception")))
    assert settler.plan(settling, NESTED) is Settle.REARM
    settler.moving(1, settling, Settle.REARM)
    real = event("stopped", stopped("exception"))
    assert settler.begin(1, real).shown is None  # shown: the real stop, as it comes


def test_stops_no_hook_made_and_workers_known_not_to_stop_there_are_shown_at_once() -> None:
    settler = Settler()
    assert not settler.takes(1, {"reason": "breakpoint", "hitBreakpointIds": [3]}, None)
    assert not settler.takes(1, stopped("pause"), None)
    assert not settler.takes(1, stopped("breakpoint"), in_hook=False)  # a live worker's mark
    assert not settler.takes("1", stopped("breakpoint"), None)  # not a thread id


def test_a_hook_of_an_unknown_shape_never_hides_a_stop() -> None:
    settler = Settler()
    settling = settler.begin(1, event("stopped", stopped("breakpoint")))
    for _ in range(MAX_SETTLE_STEPS):
        assert settler.plan(settling, IN_HOOK) is Settle.STEP
        settler.moving(1, settling, Settle.STEP)
        settling = settler.begin(1, event("stopped", stopped("step")))
    assert settler.plan(settling, IN_HOOK) is Settle.SHOW  # still in the hook: shown there

    settler.moving(1, settling, Settle.STEP)
    settler.drop(1)  # the step failed, or the worker went
    assert not settler
