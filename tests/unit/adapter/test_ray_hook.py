"""Which stops are moved out of Ray's breakpoint hook (frames as debugpy 1.8.22 reported them
on Python 3.12.1 and 3.13.0; the moves themselves run in the e2e tests on each Python)."""

from __future__ import annotations

from typing import Any

from raydap.adapter.ray_hook import REARM_STATEMENT, Settle, may_stop_in_hook, settle_action

SITE = "/venv/lib/python3.12/site-packages"


def frame(name: str, path: str, line: int = 1) -> dict[str, Any]:
    return {"id": line, "name": name, "line": line, "source": {"path": path}}


USER = frame("square", "/job/task_breakpoint.py", 10)


def test_a_breakpoint_shown_in_rays_rpdb_is_stepped_out_of_it() -> None:
    frames = [frame("set_trace", f"{SITE}/ray/util/rpdb.py", 299), USER]
    assert settle_action(frames) is Settle.STEP
    assert settle_action([frame("set_trace", f"{SITE}/ray/util/debugpy.py", 98)]) is (Settle.STEP)


def test_the_users_own_line_is_shown_as_it_is() -> None:
    assert settle_action([USER, frame("main_loop", f"{SITE}/ray/_private/worker.py")]) is (
        Settle.SHOW
    )
    assert settle_action([]) is Settle.SHOW


def test_pydevds_nested_post_mortem_stop_is_rearmed() -> None:
    nested = [
        frame("helper", "/usr/lib/python3.12/contextlib.py", 301),
        frame("_debugpy_excepthook", f"{SITE}/ray/util/debugpy.py", 126),
    ]
    assert settle_action(nested) is Settle.REARM
    # contextlib over user code is an ordinary stop in a user's context manager
    assert settle_action([nested[0], USER]) is Settle.SHOW


def test_only_stops_ray_may_have_made_are_looked_at() -> None:
    assert may_stop_in_hook({"reason": "breakpoint", "threadId": 1})
    assert may_stop_in_hook({"reason": "exception", "threadId": 1})
    assert not may_stop_in_hook({"reason": "breakpoint", "hitBreakpointIds": [3]})
    assert not may_stop_in_hook({"reason": "step"})
    assert not may_stop_in_hook({"reason": "pause"})


def test_the_rearm_statement_is_one_expression_a_worker_can_run() -> None:
    compile(REARM_STATEMENT, "<evaluate>", "eval")
