"""Which held workers join a follow session: a scripted debugpy stands in for the worker, so
the worker can be continued and stopped at will."""

from __future__ import annotations

import time

import pytest

from raydap.adapter import AttachError, State, Worker
from raydap.bridge.workers.filters import WorkerFilter
from raydap.bridge.workers.follow import FollowFeed, follow_filter
from raydap.bridge.workers.holder import Holder
from raydap.bridge.workers.records import BreakpointRecord
from raydap.bridge.workers.registry import Registry
from raydap.protocol import event
from tests.unit.adapter.peer import held_peer
from tests.waiting import until


async def test_a_worker_continued_a_moment_ago_joins_only_at_its_next_stop() -> None:
    registry = Registry()
    holder = Holder(registry)
    async with held_peer() as (peer, upstream):
        record = BreakpointRecord(id="w1", node_ip="127.0.0.1", paused_since=time.time())
        holder.upstreams["w1"] = upstream
        await upstream.request("continue", {"threadId": 1})
        assert upstream.state is State.RUNNING  # still held: the detach grace
        registry.put(record.model_copy(update={"state": "running"}))

        joined: list[Worker] = []
        feed = FollowFeed(holder, WorkerFilter())
        feed.start(joined.append, lambda why: None)
        assert joined == []

        peer.write(event("stopped", {"reason": "breakpoint", "threadId": 1}))
        await until(lambda: upstream.state is State.STOPPED)
        registry.put(record.model_copy(update={"state": "paused"}))
        await until(lambda: bool(joined))
        assert [w.key for w in joined] == ["w1"]
        feed.stop()
    await holder.close()


def test_follow_takes_a_filter_as_text_for_editors_whose_configurations_hold_strings() -> None:
    assert follow_filter({"follow": "job=02000000,task=train*"}) == WorkerFilter(
        job="02000000", task="train*"
    )
    assert follow_filter({"follow": ""}) == WorkerFilter()
    with pytest.raises(AttachError, match="is not a filter: use job=ID"):
        follow_filter({"follow": "rank=1"})


async def test_a_follow_session_that_fell_behind_still_joins_a_stopped_worker() -> None:
    """Changes lost while the session lagged are made up from the records, not skipped."""
    registry = Registry(max_queued_changes=2)
    holder = Holder(registry)
    async with held_peer() as (_, upstream):
        joined: list[Worker] = []
        feed = FollowFeed(holder, WorkerFilter())
        feed.start(joined.append, lambda why: None)
        now = time.time()
        for i in range(5):  # a burst the session has no chance to read
            registry.put(BreakpointRecord(id=f"x{i}", node_ip="127.0.0.1", paused_since=now))
        holder.upstreams["w1"] = upstream
        registry.put(BreakpointRecord(id="w1", node_ip="127.0.0.1", paused_since=now))
        await until(lambda: bool(joined))
        assert [w.key for w in joined] == ["w1"]
        feed.stop()
    await holder.close()


async def test_a_session_attached_to_one_worker_debugs_its_job_while_it_lasts() -> None:
    """What raises the job's collective timeouts (:mod:`.group_timeouts`): one worker's
    session counts for its whole job, as a follow session does, and stops counting with it."""
    from raydap.bridge.workers.follow import resolve
    from raydap.bridge.workers.group_timeouts import Follows

    registry = Registry()
    holder = Holder(registry)
    follows = Follows()
    async with held_peer() as (_, upstream):
        registry.put(BreakpointRecord(id="w1", node_ip="127.0.0.1", paused_since=time.time(),
                                      job_id="02000000", live=True, state="running"))  # fmt: skip
        holder.upstreams["w1"] = upstream
        feed = await resolve(holder, {"breakpoint": "w1"}, follows=follows)
        assert follows.filters() == []
        joined: list[Worker] = []
        feed.start(joined.append, lambda why: None)
        assert [w.key for w in joined] == ["w1"]
        assert follows.filters() == [WorkerFilter(job="02000000")]
        feed.stop()
        assert follows.filters() == []
    await holder.close()
