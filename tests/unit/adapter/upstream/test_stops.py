"""A worker's stops, fed the messages debugpy sends, in the orders it sends them."""

from __future__ import annotations

from raydap.adapter.upstream.stops import Stops
from raydap.protocol import Event, event


def stop(thread_id: int, reason: str = "breakpoint") -> Event:
    return event("stopped", {"reason": reason, "threadId": thread_id})


def test_the_newest_stop_is_shown_first_and_a_thread_stopping_again_moves_up() -> None:
    stops = Stops()
    for message in (stop(1), stop(2), stop(1, "step")):
        stops.stopped(message)
    top = stops.top()
    assert list(stops) == [2, 1] and top is not None and top.body["reason"] == "step"


def test_a_resume_is_told_once_whichever_way_debugpy_says_it() -> None:
    stops = Stops()
    stops.stopped(stop(1))
    stops.stopped(stop(2))
    one = stops.resumed(2, {"allThreadsContinued": False})  # the response to continue
    assert one is not None and one.body == {"allThreadsContinued": False, "threadId": 2}
    assert stops.resumed(2, {"allThreadsContinued": False}) is None  # its continued event
    everything = stops.resumed(1, {})  # no allThreadsContinued: DAP says all threads
    assert everything is not None and everything.body["allThreadsContinued"] is True
    assert not stops and stops.top() is None


def test_a_thread_that_exits_ends_its_stop_without_a_continued_event() -> None:
    stops = Stops()
    stops.stopped(stop(1))
    assert stops.exited(1) and not stops.exited(1) and not stops.exited("1")
