"""Which workers a filter means: its fields, its text form, and a rank set among them."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from raydap.bridge.workers.filters import BadFilter, WorkerFilter, parse_filter
from raydap.bridge.workers.records import BreakpointRecord


def rank(number: int | None, role: str | None = None, job: str = "01") -> BreakpointRecord:
    return BreakpointRecord(id=f"w{number}", node_ip="10.0.0.1", paused_since=0, job_id=job,
                            rank=number, role=role)  # fmt: skip


WORKERS = [rank(r, "actor" if r < 4 else "critic") for r in range(8)] + [
    rank(None),
    rank(0, job="02"),
]


def chosen(where: WorkerFilter) -> list[tuple[str | None, int | None]]:
    return [(w.job_id, w.rank) for w in WORKERS if where.matches(w)]


def test_a_rank_set_chooses_ranks_by_number_and_role_beside_the_other_fields() -> None:
    assert chosen(WorkerFilter(job="01", ranks="0-2,6")) == [("01", r) for r in (0, 1, 2, 6)]
    assert chosen(WorkerFilter(ranks="critic 3-5")) == [("01", 4), ("01", 5)]
    assert chosen(WorkerFilter(ranks="0")) == [("01", 0), ("02", 0)]  # a worker of no rank: none
    assert chosen(WorkerFilter(ranks="tp=1")) == []  # coordinates: none known of these ranks


def test_a_rank_set_in_the_text_form_keeps_its_own_commas() -> None:
    assert parse_filter("job=01,ranks=[0-2,6]") == WorkerFilter(job="01", ranks="0-2,6")
    assert parse_filter("ranks='critic 3-5',job=01") == WorkerFilter(job="01", ranks="critic 3-5")
    assert parse_filter('{"ranks": "0-3"}').ranks == "0-3"
    with pytest.raises(BadFilter, match=r"ranks=\[0-3,8\]"):
        parse_filter("job=01,ranks=[3-1]")


def test_a_bad_rank_set_says_what_one_looks_like() -> None:
    with pytest.raises(ValidationError, match="a range goes up"):
        WorkerFilter(ranks="3-1")
    with pytest.raises(ValidationError, match="a rank set is terms"):
        WorkerFilter(ranks="dp=(1")
