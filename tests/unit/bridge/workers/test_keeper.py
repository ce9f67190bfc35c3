"""The keeper names a paused worker however late the dashboard lists its task (a scripted
debugpy peer; the dashboard's answers stand in, since a head slow by tens of seconds cannot
be made on demand)."""

from __future__ import annotations

import time

import pytest

from raydap.bridge.cluster.dashboard import ActorRow, DashboardError, TaskRow
from raydap.bridge.workers import keeper
from raydap.bridge.workers.keeper import RecordKeeper
from raydap.bridge.workers.records import BreakpointRecord, RecordState
from raydap.bridge.workers.registry import Registry
from tests.unit.adapter.peer import held_peer
from tests.waiting import until

WORKER = "ab" * 28


class LateDashboard:
    """Lists the worker's task only from ``listed_after`` seconds on, failing now and then
    before that as a loaded dashboard does."""

    def __init__(self, listed_after: float) -> None:
        self.since = time.monotonic()
        self.listed_after = listed_after
        self.asked = 0

    async def running_task(self, worker_id: str) -> TaskRow | None:
        self.asked += 1
        if time.monotonic() - self.since < self.listed_after:
            if self.asked % 3 == 0:
                raise DashboardError("timed out")
            return None
        return TaskRow(task_id="t1", name="square", state="RUNNING", job_id="02000000",
                       worker_id=worker_id)  # fmt: skip

    async def actor_in(self, pid: int, node_id: str | None) -> ActorRow | None:
        return None


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    """The keeper's waits, scaled down a hundredfold."""
    monkeypatch.setattr(keeper, "DESCRIBE_EVERY", 0.0025)
    monkeypatch.setattr(keeper, "DESCRIBE_FOR", 0.1)
    monkeypatch.setattr(keeper, "DESCRIBE_AT_MOST_EVERY", 0.08)


def paused_record() -> BreakpointRecord:
    return BreakpointRecord(id="w1", node_ip="127.0.0.1", pid=4242, worker_id=WORKER,
                            paused_since=time.time())  # fmt: skip


async def test_a_worker_the_dashboard_lists_late_is_named_while_it_stays_paused(
    quick: None,
) -> None:
    registry = Registry()
    dashboard = LateDashboard(listed_after=0.6)  # six times the prompt asking's span
    records = RecordKeeper(registry, dashboard)
    registry.put(paused_record())
    async with held_peer() as (_, upstream):
        records.update("w1", upstream)
        await until(lambda: (registry.get("w1") or paused_record()).task_name, timeout=5)
        named = registry.get("w1")
        assert named is not None and named.state == RecordState.PAUSED
        assert (named.task_name, named.job_id, named.task_id) == ("square", "02000000", "t1")
        assert upstream.name == named.label
        # Asked promptly at first, then ever less often: far fewer times than prompt asking
        # for the whole wait would have
        assert dashboard.asked < 0.6 / 0.0025 / 2
        await records.close()


async def test_a_worker_that_ran_on_unnamed_is_asked_about_no_more(quick: None) -> None:
    registry = Registry()
    dashboard = LateDashboard(listed_after=3600)
    records = RecordKeeper(registry, dashboard)
    registry.put(paused_record())
    async with held_peer() as (_, upstream):
        records.update("w1", upstream)
        await until(lambda: dashboard.asked > 0)
        record = registry.get("w1")
        assert record is not None
        registry.put(record.model_copy(update={"state": RecordState.RUNNING}))
        await until(lambda: not records._tasks, timeout=5)  # the naming gave up
        asked = dashboard.asked
        assert (registry.get("w1") or record).task_name is None
        await records.close()
    assert dashboard.asked == asked
