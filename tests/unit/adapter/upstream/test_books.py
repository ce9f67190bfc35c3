"""The breakpoint books, driven with plain values: no worker, no socket."""

from __future__ import annotations

from raydap.adapter.upstream.books import (
    NO_WORKER_YET,
    SessionBook,
    WorkerBook,
    book_key,
    requested,
    spec_of,
    split,
)

KEY = ("setBreakpoints", "/w/train.py")


def test_the_worker_gets_the_union_and_each_session_its_share() -> None:
    book = WorkerBook()
    three, five, seven = spec_of({"line": 3}), spec_of({"line": 5}), spec_of({"line": 7})
    assert book.put("alice", KEY, [three, five]) == (three, five)
    union = book.put("bob", KEY, [five, seven])
    assert union == (three, five, seven)  # five is asked twice, sent once
    answers = [{"id": 11, "verified": True, "line": 3}, {"id": 12, "verified": True, "line": 6},
               {"id": 13, "verified": False}]  # fmt: skip
    assert split([five, seven], union, answers) == answers[1:]
    book.answered(KEY, union, answers)
    assert book.spec_of_id(12) == (KEY, five)
    assert book.spec_of_id(99) is None
    assert book.remove("bob") == [KEY]  # seven leaves the worker
    assert book.union(KEY) == (three, five)
    assert book.remove("alice") == [KEY] and book.union(KEY) == ()


def test_removing_a_session_that_shares_everything_changes_nothing() -> None:
    book = WorkerBook()
    three = spec_of({"line": 3})
    book.put("alice", KEY, [three])
    book.put("bob", KEY, [three])
    assert book.remove("bob") == []


def test_a_session_keeps_ids_and_is_told_only_what_changed() -> None:
    book = SessionBook()
    first = book.set(KEY, [{"line": 3}, {"line": 9}])
    shown = book.shown(KEY)  # answered before any worker joined
    assert [(b["id"], b["verified"], b["message"]) for b in shown] == [
        (1, False, NO_WORKER_YET), (2, False, NO_WORKER_YET)
    ]  # fmt: skip
    book.answered("w1", first, [{"verified": True, "line": 4}, {"verified": False}])
    assert book.changes() == [
        {"id": 1, "verified": True, "line": 4, "source": {"path": "/w/train.py"}},
        {"id": 2, "verified": False, "line": 9, "message": "not verified by the workers",
         "source": {"path": "/w/train.py"}},
    ]  # fmt: skip
    assert book.changes() == []  # told once
    book.answered("w2", first, [{"verified": False, "message": "no such line"}] * 2)
    assert book.changes() == []  # one worker verified it: still verified
    book.forget_worker("w1")
    assert [(b["id"], b["verified"], b.get("message")) for b in book.changes()] == [
        (1, False, "no such line"), (2, False, "no such line")
    ]  # fmt: skip
    again = book.set(KEY, [{"line": 9}, {"line": 12}])
    assert [entry.id for entry in again] == [2, 3]  # line 9 keeps its id, line 12 is new
    assert book.ids_of(KEY, spec_of({"line": 9})) == [2]
    assert book.changes() == []  # line 12 is not the client's until its request is answered


def test_a_workers_late_word_changes_what_the_client_sees() -> None:
    book = SessionBook()
    entries = book.set(KEY, [{"line": 3}])
    book.answered("w1", entries, [{"verified": False, "message": "pending"}])
    book.shown(KEY)
    book.answered_one("w1", KEY, spec_of({"line": 3}), {"verified": True, "line": 3})
    assert [b["verified"] for b in book.changes()] == [True]


def test_a_capture_point_a_worker_turned_off_says_why_and_is_unverified_once_all_did() -> None:
    book = SessionBook()
    point = {"line": 3, "mode": "capture", "capture": {"id": "cp-0123456789"}}
    entries = book.set(KEY, [point])
    book.answered("w1", entries, [{"verified": True, "line": 3}])
    book.answered("w2", entries, [{"verified": True, "line": 3}])
    book.shown(KEY)
    book.turned_off("w1", KEY, spec_of(point), "turned itself off in rank 1: over budget")
    assert [(b["verified"], b["message"]) for b in book.changes()] == [
        (True, "turned itself off in rank 1: over budget")
    ]  # fmt: skip
    book.turned_off("w2", KEY, spec_of(point), "turned itself off in rank 2: over")
    book.answered("w2", entries, [{"verified": True, "line": 3}])  # an answer read late
    assert [(b["verified"], b["message"]) for b in book.changes()] == [
        (False, "turned itself off in rank 1: over budget (and 1 more)")
    ]  # fmt: skip


def test_set_requests_are_read_in_both_forms() -> None:
    assert requested("setBreakpoints", {"lines": [3, "x"]}) == [{"line": 3}]
    assert requested("setBreakpoints", {"breakpoints": [{"line": 3}, 4]}) == [{"line": 3}]
    assert requested("setFunctionBreakpoints", {"breakpoints": [{"name": "f"}]}) == [{"name": "f"}]
    assert book_key("setBreakpoints", {"source": {"path": "/a.py"}}) == ("setBreakpoints", "/a.py")
    assert book_key("setFunctionBreakpoints", {}) == ("setFunctionBreakpoints", "")
