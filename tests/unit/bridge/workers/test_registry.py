import asyncio
import time

import pytest

from raydap.bridge.workers.filters import WorkerFilter
from raydap.bridge.workers.records import BreakpointRecord
from raydap.bridge.workers.registry import Change, LookupFailed, Registry, Resync


def record(rid: str, **fields: object) -> BreakpointRecord:
    values: dict[str, object] = {"id": rid, "node_ip": "10.0.0.1", "paused_since": time.time()}
    values.update(fields)
    return BreakpointRecord.model_validate(values)


def test_resolve_accepts_a_unique_prefix() -> None:
    registry = Registry()
    registry.put(record("abc123"))
    registry.put(record("abd456"))
    assert registry.resolve("abc").id == "abc123"
    assert registry.resolve("abd456").id == "abd456"


def test_resolve_names_the_problem() -> None:
    registry = Registry()
    registry.put(record("abc123"))
    registry.put(record("abd456"))
    with pytest.raises(LookupFailed, match=r"'ab' is ambiguous \(abc123, abd456\)"):
        registry.resolve("ab")
    with pytest.raises(LookupFailed, match=r"no paused worker with id 'zz'.*raydap list"):
        registry.resolve("zz")
    with pytest.raises(LookupFailed, match="no breakpoint id given"):
        registry.resolve("")


async def test_subscribers_see_each_real_change_once() -> None:
    registry = Registry()
    feed = registry.subscribe()
    first = record("a1", paused_since=1.0)
    registry.put(first)
    registry.put(first.model_copy())  # equal: no change
    registry.put(first.model_copy(update={"clients": 1}))
    registry.remove("a1")
    registry.remove("a1")  # already gone: no change
    changes = [feed.get_nowait() for _ in range(feed.qsize())]
    assert [(c.kind, c.record.clients) for c in changes] == [
        ("added", 0),
        ("updated", 1),
        ("removed", 1),
    ]


async def test_a_subscriber_that_falls_behind_is_told_to_reload_not_dropped() -> None:
    registry = Registry(max_queued_changes=3)
    slow = registry.subscribe()
    for i in range(10):
        registry.put(record(f"r{i}"))
    live = registry.subscribe()
    registry.remove("r0")
    assert live.qsize() == 1
    assert slow.qsize() == 1  # not ten changes buffered: one resync
    assert isinstance(slow.get_nowait(), Resync)
    registry.remove("r1")  # after reloading, changes are news again
    change = slow.get_nowait()
    assert isinstance(change, Change) and (change.kind, change.record.id) == ("removed", "r1")


def test_records_are_listed_longest_paused_first() -> None:
    registry = Registry()
    registry.put(record("new", paused_since=20.0))
    registry.put(record("old", paused_since=10.0))
    assert [r.id for r in registry.records()] == ["old", "new"]


def test_filters_match_by_job_task_glob_actor_and_node() -> None:
    trainer = record(
        "t1", job_id="02000000", task_name="Trainer.step", actor_id="aa11", actor_class="Trainer",
        node_id="ff00ee", node_ip="10.0.0.7",
    )  # fmt: skip
    assert WorkerFilter().matches(trainer)
    assert WorkerFilter(job="02000000", task="Trainer.*").matches(trainer)
    assert WorkerFilter(actor="Trainer").matches(trainer)
    assert WorkerFilter(actor="aa11", node="ff0").matches(trainer)
    assert WorkerFilter(node="10.0.0.7").matches(trainer)
    assert not WorkerFilter(job="01000000").matches(trainer)
    assert not WorkerFilter(task="rollout*").matches(trainer)
    assert not WorkerFilter(node="10.0.0.8").matches(trainer)


def test_filter_rejects_unknown_fields() -> None:
    with pytest.raises(ValueError, match="extra"):
        WorkerFilter.model_validate({"jobs": "x"})


async def test_until_asks_again_at_each_change_and_gives_up_in_time() -> None:
    registry = Registry()
    registry.put(record("a", state="running"))

    def paused() -> BreakpointRecord | None:
        found = registry.get("a")
        return found if found is not None and found.state == "paused" else None

    waiting = asyncio.create_task(registry.until(paused, 5))
    await asyncio.sleep(0.05)  # a check that nothing happens: no record paused, no answer
    assert not waiting.done()
    registry.put(record("a", state="paused"))
    assert (await asyncio.wait_for(waiting, 2)) == registry.get("a")

    started = time.monotonic()
    assert await registry.until(lambda: None, 0.2) is None
    assert 0.2 <= time.monotonic() - started < 2
    assert registry._subscribers == set()  # nothing left subscribed


async def test_the_next_change_comes_in_time_and_a_cancel_at_its_moment_is_kept() -> None:
    registry = Registry()
    changes = registry.subscribe()
    assert await changes.next_within(0.05) is None
    registry.put(record("a"))
    change = await changes.next_within(1)
    assert isinstance(change, Change) and change.record.id == "a"

    waiting = asyncio.create_task(changes.next_within(60))
    await asyncio.sleep(0.01)
    registry.put(record("b"))  # the change and the cancel, in one turn of the loop
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    after = await changes.next_within(1)  # not taken by the cancelled wait: still there
    assert isinstance(after, Change) and after.record.id == "b"
