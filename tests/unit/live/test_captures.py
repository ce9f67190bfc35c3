"""A capture point's condition, as the bridge writes it and a worker reads it back without
compiling it at every hit (anything else is left to pydevd), and its limits in the worker."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from pytest import MonkeyPatch

from raydap.live import captures, to_bridge
from raydap.live.captures import condition, read_condition


def test_a_condition_reads_back_as_its_points() -> None:
    points = [("cp-0123456789", '{"interval": 1.0}'), ("cp-9876543210", '{"rank": 2}')]

    written = condition(points)

    assert read_condition(written) == points
    assert (
        eval(written.replace("__import__", "(lambda *a, **k: Points())"), {"Points": Points})
        is False
    )


class Points:
    def hit(self, point: str, settings: str) -> bool:
        return False


def test_anything_else_is_not_read_as_capture_points() -> None:
    written = condition([("cp-0123456789", "{}")])
    plain = f"{written} or (step > 5)"  # a plain breakpoint on the same line
    smuggled = written.replace("_c.hit(", "print('x') or _c.hit(")

    assert read_condition(plain) is None
    assert read_condition(smuggled) is None
    assert read_condition("x > 1") is None
    assert read_condition(written.replace("'{}'", "settings")) is None


def test_a_point_captures_within_its_limits_in_the_worker(monkeypatch: MonkeyPatch) -> None:
    """Each limit, as a worker applies it: how many, how often, until when, and which rank
    (``RANK`` here: no torch.distributed group in this process)."""
    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(to_bridge, "send_event", lambda name, body: sent.append(body) or True)
    monkeypatch.setenv("RANK", "1")
    captures.forget()
    frame = sys._getframe()

    def hits(point: str, times: int, **settings: Any) -> list[int]:
        for _ in range(times):
            captures._hit(point, json.dumps(settings), frame)
        return [body["hit"] for body in sent if body["point"] == point]

    assert hits("cp-most", 5, interval=0, most=3) == [1, 2, 3]
    assert hits("cp-interval", 5, interval=60) == [1]  # one, then not for a minute
    assert hits("cp-expired", 3, interval=0, until=time.time() - 1) == []
    assert hits("cp-later", 2, interval=0, until=time.time() + 60) == [1, 2]
    assert hits("cp-rank-0", 2, interval=0, rank=0) == []
    assert hits("cp-rank-1", 2, interval=0, rank=1) == [1, 2]
    assert hits("cp-if", 3, interval=0, condition="frame is not None and len(sent) < 0") == []
    assert hits("cp-if-so", 1, interval=0, condition="frame is not None") == [1]
    mine = next(body for body in sent if body["point"] == "cp-later")
    assert mine["frames"][0]["function"].endswith(
        "test_a_point_captures_within_its_limits_in_the_worker"
    )
    captures.forget()


def test_a_point_turns_itself_off_after_two_captures_in_a_row_over_its_budget(
    monkeypatch: MonkeyPatch,
) -> None:
    """One costly capture may be the node's (a stolen CPU counts as the thread's): the point
    runs on; two in a row are the point's, and it turns off and says why. The captures' CPU
    times are given (80, 10, 80, 80 ms) by the clock the budget reads."""
    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(to_bridge, "send_event", lambda name, body: sent.append(body) or True)
    captures.forget()
    costs = iter([80.0, 10.0, 80.0, 80.0])
    clock = iter(t for cost in costs for t in (0.0, cost / 1000))
    monkeypatch.setattr(captures.time, "thread_time", lambda: next(clock))
    settings = json.dumps({"interval": 0, "budget_ms": 50})

    for _ in range(6):
        captures._hit("cp-costly", settings, sys._getframe())

    assert [body["hit"] for body in sent] == [1, 2, 3, 4]  # none after it turned off
    assert [body.get("disabled") for body in sent[:3]] == [None, None, None]
    assert sent[3]["disabled"] == (
        "2 captures in a row took more CPU than the point's budget of 50 ms a hit (the last: 80 ms)"
    )
    captures.forget()


def test_a_capture_never_starts_ray_in_a_process_that_imported_it_but_never_joined() -> None:
    """A worker's child (a DataLoader worker) has Ray imported and no cluster: asking Ray for
    its job there would start a local one."""
    import ray

    assert not ray.is_initialized()
    assert captures._job() is None
    assert not ray.is_initialized()
