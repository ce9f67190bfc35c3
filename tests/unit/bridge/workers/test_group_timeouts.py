"""When the bridge raises a debugged job's collective timeouts and gives them back, with
recording upstreams standing in for the ranks (real gloo ranks: tests/unit/live/test_timeouts.py;
a real Ray job whose rank stops for longer than its timeout: tests/e2e/test_hangs.py)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from raydap.adapter.upstream.books import spec_of
from raydap.adapter.upstream.breakpoints import WorkerBreakpoints
from raydap.bridge.workers.filters import WorkerFilter
from raydap.bridge.workers.group_timeouts import (
    Follows,
    GroupTimeouts,
    armed_jobs,
    debugged_jobs,
    wanted,
)
from raydap.bridge.workers.holder import Holder, record_id
from raydap.bridge.workers.records import BreakpointRecord
from raydap.bridge.workers.registry import Registry
from raydap.protocol import Response
from raydap.protocol.extension import COLLECTIVES
from tests.unit.bridge.hangs.test_desync import RECORDINGS

KEY = ("setBreakpoints", "/job/train.py")
IDENTITY = json.loads((RECORDINGS / "gloo_straggler.json").read_text())["ranks"][0]["identity"]


class Rank:
    """A live rank's debug connection: records what it was asked, answers as a rank does;
    ``issued`` is the last collective its recorder holds (None: its recorder is off)."""

    def __init__(self) -> None:
        self.given: list[float | None] = []
        self.issued: int | None = 7
        self.breakpoints = WorkerBreakpoints(self._debugpy)

    async def request(self, command: str, arguments: dict[str, Any], timeout: float) -> Response:
        assert command == COLLECTIVES
        body: dict[str, Any] = {"identity": IDENTITY}
        if "timeout" in arguments:
            self.given.append(arguments["timeout"])
            body["timeouts"] = {"seconds": arguments["timeout"], "backends": 1, "own": [20.0]}
        if arguments.get("status") and self.issued is not None:
            progress = {"last_record": self.issued, "last_done": self.issued}
            body["recorders"] = {"gloo": {"version": "2.10", "pg_status": {}, "entries": [],
                                          "progress": progress}}  # fmt: skip
        elif arguments.get("status"):
            body["reason"] = "the Flight Recorder is off"
        return Response(request_seq=1, success=True, command=command, body=body)

    async def _debugpy(self, command: str, arguments: dict[str, Any]) -> Response:
        answers = [{"id": 1, "verified": True} for _ in arguments["breakpoints"]]
        return Response(request_seq=1, success=True, command=command,
                        body={"breakpoints": answers})  # fmt: skip


def record(job: str, rank: int, state: str = "running", **more: Any) -> BreakpointRecord:
    return BreakpointRecord(id=record_id(f"{job}w{rank}" + "0" * 10), node_ip="10.0.0.1",
                            paused_since=0, live=True, state=state, job_id=job, **more)  # fmt: skip


def two_jobs() -> tuple[Holder, dict[str, Rank], list[float], Follows]:
    """Jobs 01 and 02, two live ranks each that made their groups."""
    holder = Holder(Registry())
    identity = IDENTITY
    ranks = {}
    for job in ("01", "02"):
        for rank in (0, 1):
            made = record(job, rank)
            holder.registry.put(made)
            ranks[made.id] = holder.upstreams[made.id] = Rank()  # type: ignore[assignment]
            holder.process_groups.told(made.id, {"identity": identity})
    return holder, ranks, [0.0], Follows()


def timeouts(holder: Holder, now: list[float], follows: Follows) -> GroupTimeouts:
    return GroupTimeouts(holder, follows, seconds=3600, linger=30, clock=lambda: now[0])


async def test_a_followed_jobs_ranks_are_raised_and_given_back_once_it_is_left() -> None:
    holder, ranks, now, follows = two_jobs()
    watch = timeouts(holder, now, follows)
    await watch.apply()
    await watch.apply()
    # Nobody debugs: each rank is told once to keep its own (a bridge that replaced another
    # does not know what that one raised)
    assert all(rank.given == [None] for rank in ranks.values())
    unfollow = follows.add(WorkerFilter(job="01"))
    await watch.apply()
    await watch.apply()  # once each
    assert {rid[:8]: r.given for rid, r in ranks.items()} == {
        record("01", 0).id[:8]: [None, 3600], record("01", 1).id[:8]: [None, 3600],
        record("02", 0).id[:8]: [None], record("02", 1).id[:8]: [None],
    }  # fmt: skip
    unfollow()
    now[0] = 29.0
    await watch.apply()
    assert ranks[record("01", 0).id].given == [None, 3600]  # lingers: a stop may come back
    now[0] = 31.0
    await watch.apply()
    assert ranks[record("01", 0).id].given == [None, 3600, None]
    assert ranks[record("02", 0).id].given == [None]


async def test_a_stop_raises_its_peers_and_breakpoints_raise_their_own_job_only() -> None:
    """Issue "fleet": any breakpoint anywhere once raised every rank of every live job."""
    holder, ranks, now, follows = two_jobs()
    watch = timeouts(holder, now, follows)
    holder.registry.put(record("02", 1, state="paused"))
    await watch.apply()
    assert ranks[record("02", 0).id].given == [3600]  # the peer of the stopped rank
    assert ranks[record("01", 0).id].given == [None]
    holder.registry.put(record("02", 1))  # it runs on
    now[0] = 31.0
    line = [spec_of({"line": 12, "condition": "rank == 0"})]
    await ranks[record("01", 1).id].breakpoints.give("editor", KEY, line, {})
    await watch.apply()
    assert [rank.given[-1] for rank in ranks.values()] == [3600, 3600, None, None]
    await watch.give_back()  # the bridge stops for good
    assert [rank.given[-1] for rank in ranks.values()] == [None] * 4


async def test_capture_points_and_log_points_raise_nothing() -> None:
    """Issue "fleet": a capture point reached workers as a breakpoint, so setting one turned
    off every live job's collective timeouts, with nobody debugging."""
    holder, ranks, now, follows = two_jobs()
    watch = timeouts(holder, now, follows)
    point = spec_of({"line": 30, "mode": "capture", "capture": {"id": "cp-0123456789"}})
    logs = spec_of({"line": 31, "logMessage": "loss={loss}"})
    for rank in ranks.values():
        await rank.breakpoints.give("ci (HTTP)", KEY, [point, logs], {}, beside_kept=True)
    await watch.apply()
    assert armed_jobs(holder) == set()
    assert all(rank.given == [None] for rank in ranks.values())


async def test_a_rank_that_makes_another_group_is_raised_again() -> None:
    holder, ranks, now, follows = two_jobs()
    watch = timeouts(holder, now, follows)
    follows.add(WorkerFilter())
    await watch.apply()
    rid = record("01", 0).id
    body = json.loads((RECORDINGS / "gloo_straggler.json").read_text())["ranks"][0]["identity"]
    body["groups"].append({"name": "9", "desc": "pair", "spans": [[0, 2, 1]]})
    holder.process_groups.told(rid, {"identity": body})
    await watch.apply()
    assert ranks[rid].given == [3600, 3600]


def test_which_jobs_are_debugged_and_what_each_rank_gets() -> None:
    records = [record("01", 0), record("01", 1, state="paused"), record("02", 0),
               record("03", 0, task_name="Trainer.train"), record("04", 0, parent="x")]  # fmt: skip
    assert debugged_jobs(records, []) == {"01"}
    assert debugged_jobs(records, [WorkerFilter(task="Trainer.*")]) == {"01", "03"}
    assert debugged_jobs(records, [WorkerFilter()]) == {"01", "02", "03", "04"}
    ranks = {r.id for r in records} - {record("02", 0).id}  # 02 made no group
    goal = wanted(records, ranks, {"01"}, 60)
    assert goal == {record("01", 0).id: 60, record("01", 1).id: 60,
                    record("03", 0).id: None}  # a child is no rank of its own  # fmt: skip


class Silent(Rank):
    """A rank whose debug connection fails every request (pydevd gone, or too busy)."""

    async def request(self, command: str, arguments: dict[str, Any], timeout: float) -> Response:
        from raydap.adapter import UpstreamError

        self.given.append(arguments.get("timeout"))
        raise UpstreamError("no answer within 5 s")


class Stuck(Rank):
    async def request(self, command: str, arguments: dict[str, Any], timeout: float) -> Response:
        import asyncio

        self.given.append(arguments.get("timeout"))
        await asyncio.sleep(3600)
        raise AssertionError


async def test_a_rank_that_does_not_answer_is_asked_again_later_not_every_tick() -> None:
    holder, ranks, now, follows = two_jobs()
    rid = record("01", 0).id
    ranks[rid] = holder.upstreams[rid] = Silent()  # type: ignore[assignment]
    watch = timeouts(holder, now, follows)
    follows.add(WorkerFilter(job="01"))
    for tick in range(5):
        now[0] = tick * 0.25
        await watch.apply()
    assert ranks[rid].given == [3600]
    now[0] = 11.0
    await watch.apply()
    assert ranks[rid].given == [3600, 3600]


async def test_a_bridge_that_stops_does_not_wait_on_a_rank_that_never_answers() -> None:
    holder, ranks, now, follows = two_jobs()
    watch = timeouts(holder, now, follows)
    follows.add(WorkerFilter(job="01"))
    await watch.apply()
    rid = record("01", 0).id
    ranks[rid] = holder.upstreams[rid] = Stuck()  # type: ignore[assignment]
    await watch.give_back(within=0.2)  # returns, saying so in the log
    assert ranks[rid].given == [None] and ranks[record("01", 1).id].given[-1] is None


async def test_a_watch_cancelled_as_a_worker_changes_ends_at_once() -> None:
    """A bridge stops by cancelling its loops; a change of the records at that moment (as the
    discovery stopped before it made one) once kept this one running, so the bridge never
    exited until it was killed (on 3.10 and 3.11, where ``asyncio.wait_for`` drops the cancel)."""
    holder, _, now, follows = two_jobs()
    watch = asyncio.create_task(timeouts(holder, now, follows).run(every=60))
    await asyncio.sleep(0.05)  # it has applied, and waits for a change
    holder.registry.put(record("03", 0))
    watch.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(watch, 2)
    assert holder.registry._subscribers == set()
