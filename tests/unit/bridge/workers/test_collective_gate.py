"""The gate a stop passes first, with recording ranks whose recorders count on when told (real
gloo ranks stopped by a conditional breakpoint: tests/e2e/test_hangs.py)."""

from __future__ import annotations

import asyncio
import time

from raydap.bridge.workers.collective_gate import CollectiveGate
from raydap.bridge.workers.group_timeouts import Follows, GroupTimeouts
from raydap.bridge.workers.holder import Holder
from tests.unit.bridge.workers.test_group_timeouts import Rank, record, two_jobs


def gate(holder: Holder, within: float = 2.0) -> CollectiveGate:
    timeouts = GroupTimeouts(holder, Follows(), seconds=3600, linger=30)
    return CollectiveGate(timeouts, within=within, every=0.01)


async def test_a_stop_waits_until_every_rank_of_its_job_issued_a_collective_since_its_raise() -> (
    None
):
    holder, ranks, _, _ = two_jobs()
    door = gate(holder)
    zero, one = ranks[record("01", 0).id], ranks[record("01", 1).id]
    passing = asyncio.ensure_future(door.before_stopping(record("01", 0).id))
    await asyncio.sleep(0.1)
    assert zero.given == [3600] and one.given == [3600]  # raised at once
    assert not passing.done()  # neither issued a collective since: both may wait on 20 s
    zero.issued = 8
    await asyncio.sleep(0.1)
    assert not passing.done()
    one.issued = 9
    assert await asyncio.wait_for(passing, 1) == []
    assert ranks[record("02", 0).id].given == []  # another job's ranks are left alone

    # Covered from now on: the next stop of the job passes at once, without asking again
    started = time.monotonic()
    assert await door.before_stopping(record("01", 1).id) == []
    assert time.monotonic() - started < 0.05 and zero.given == [3600]


async def test_after_its_longest_wait_the_gate_names_the_ranks_still_on_their_own_timeout() -> None:
    holder, ranks, _, _ = two_jobs()
    door = gate(holder, within=0.3)
    ranks[record("01", 0).id].issued = None  # its recorder is off: the raise alone covers it
    started = time.monotonic()
    # Stops of two workers of the job at once wait on one gate
    late = await asyncio.gather(
        door.before_stopping(record("01", 0).id), door.before_stopping(record("01", 1).id)
    )
    assert 0.3 <= time.monotonic() - started < 1.0
    labelled = holder.registry.get(record("01", 1).id)
    assert labelled is not None and late == [[labelled.label]] * 2
    assert ranks[record("01", 1).id].given == [3600]  # raised once, not once a stop


async def test_a_worker_of_no_job_with_groups_passes_at_once() -> None:
    holder, ranks, _, _ = two_jobs()
    loner = record("03", 0)
    holder.registry.put(loner)  # live, but it made no process group
    holder.upstreams[loner.id] = Rank()  # type: ignore[assignment]
    assert await gate(holder).before_stopping(loner.id) == []
    assert all(rank.given == [] for rank in ranks.values())


async def test_a_stop_while_a_rank_of_the_job_stands_stopped_is_let_through_at_once() -> None:
    """The others wait for the stopped rank in a collective and issue no other: a breakpoint
    edited meanwhile must not wait out the gate each time."""
    holder, ranks, _, _ = two_jobs()
    holder.registry.put(record("01", 1, state="paused"))
    started = time.monotonic()
    assert await gate(holder).before_stopping(record("01", 0).id) == []
    assert time.monotonic() - started < 0.5
    assert ranks[record("01", 0).id].given == [3600]
