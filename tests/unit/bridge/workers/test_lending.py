"""The holder's side of a hand-over (:mod:`raydap.bridge.workers.lending`), over real sockets
to a scripted debugpy peer: lent workers are handed out to nobody, a failed hand-over gives
every one back, and a busy worker is never lent. tests/e2e/test_replace.py hands real workers
between two bridge processes."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from raydap.adapter import AttachError, UpstreamError
from raydap.adapter.errors import Kind
from raydap.bridge.cluster.dashboard import WorkerRow
from raydap.bridge.cluster.discovery import PausedWorker
from raydap.bridge.workers.holder import Holder, record_id
from raydap.bridge.workers.holds import Hold
from raydap.bridge.workers.registry import Registry
from tests.unit.adapter.peer import ScriptedPeer
from tests.waiting import until

WORKER_ID = "ab" * 28
RID = record_id(WORKER_ID)


@pytest.fixture
async def held() -> AsyncIterator[tuple[ScriptedPeer, Holder]]:
    """A holder holding one paused worker: the scripted peer."""
    peer = ScriptedPeer()
    server = await asyncio.start_server(peer.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    holder = Holder(Registry())
    row = WorkerRow(worker_id=WORKER_ID, ip="127.0.0.1", pid=4242, debugger_port=port,
                    num_paused_threads=1)  # fmt: skip
    holder.hold(PausedWorker(row, time.time()))
    _, upstream = await holder.held_worker(RID)
    await until(lambda: upstream.quiet, what="the stop's prefetch done")
    try:
        yield peer, holder
    finally:
        await holder.close()
        server.close()


async def test_lent_workers_are_handed_out_to_nobody_until_taken_back(
    held: tuple[ScriptedPeer, Holder],
) -> None:
    _, holder = held
    lent = await holder.lending.lend_all("this bridge is being replaced")
    assert [record.id for record, _, _ in lent] == [RID]
    assert holder.holds.of(RID) is Hold.LENT
    with pytest.raises(AttachError, match="being replaced") as refused:
        await holder.held_worker(RID)
    assert refused.value.kind is Kind.UNAVAILABLE

    holder.lending.take_back_all()  # the new bridge did not take them
    assert holder.holds.of(RID) is Hold.HELD and holder.handing_over == ""
    _, upstream = await holder.held_worker(RID)
    assert (await upstream.request("evaluate", {"expression": "1"})).success


async def test_a_busy_worker_is_not_lent_and_every_worker_is_given_back(
    held: tuple[ScriptedPeer, Holder],
) -> None:
    peer, holder = held
    _, upstream = await holder.held_worker(RID)
    peer.holding["evaluate"] = asyncio.Event()
    asking = asyncio.ensure_future(upstream.request("evaluate", {"expression": "1"}))
    await until(lambda: "evaluate" in peer.received, what="the request at the worker")
    with pytest.raises(UpstreamError, match=f"still busy after 0.2 s: {RID}"):
        await holder.lending.lend_all("replaced", within=0.2)
    assert holder.holds.of(RID) is Hold.HELD and holder.handing_over == ""
    peer.holding["evaluate"].set()
    assert (await asking).success
    assert (await holder.held_worker(RID))[1] is upstream


async def test_workers_left_to_the_new_bridge_are_forgotten_without_leaving(
    held: tuple[ScriptedPeer, Holder],
) -> None:
    peer, holder = held
    await holder.lending.lend_all("replaced")
    await holder.lending.abandon_all("the new bridge holds them")
    assert holder.upstreams == {} and holder.holds.of(RID) is None
    assert RID in holder.registry  # listed still: its record went along, nobody removed it
    assert peer.disconnect_answered is None  # the worker saw no detach: it stays paused
