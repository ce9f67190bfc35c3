"""Breakpoints on a rank set, over four scripted debugpy peers laid out on a 2 x 2 (dp, tp)
mesh: given to the ranks the set names only, kept for a rank whose coordinates come later,
and left out of what the job keeps for its later workers."""

from __future__ import annotations

from contextlib import AsyncExitStack

from raydap.adapter import Upstream
from raydap.adapter.breakpoints import spec_of
from raydap.bridge.workers.holder import Holder
from raydap.bridge.workers.live import unranked
from raydap.bridge.workers.ranked_breakpoints import RankedBreakpoints, RankedLines
from raydap.bridge.workers.records import BreakpointRecord, RecordState
from raydap.bridge.workers.registry import Registry
from tests.unit.adapter.peer import PKG, ScriptedPeer, held_peer
from tests.unit.bridge.workers.test_meshes import identity
from tests.waiting import until

PATH = f"{PKG}/train.py"


def told(holder: Holder, rank: int) -> None:
    """Rank ``rank`` says its groups, as a live worker does once its job made its mesh."""
    said = identity(rank, 4, ((2, 2), ("dp", "tp"))).model_dump(mode="json")
    holder.process_groups.told(f"r{rank}", {"identity": said, "job": "01"})


def lines_sent(peer: ScriptedPeer) -> list[list[int]]:
    return [[b["line"] for b in asked["breakpoints"]] for asked in peer.breakpoint_requests]


async def test_a_breakpoint_on_tp_1_reaches_ranks_1_and_3_only_even_one_known_later() -> None:
    registry = Registry()
    holder = Holder(registry)
    ranked = RankedBreakpoints(holder)
    async with AsyncExitStack() as stack:
        peers: dict[int, tuple[ScriptedPeer, Upstream]] = {}
        for rank in range(4):
            peers[rank] = await stack.enter_async_context(held_peer())
            registry.put(BreakpointRecord(
                id=f"r{rank}", node_ip="10.0.0.1", paused_since=0, live=True,
                state=RecordState.RUNNING, job_id="01",
            ))  # fmt: skip
            holder.upstreams[f"r{rank}"] = peers[rank][1]
        for rank in (0, 1, 2):  # rank 3 has not said its coordinates yet
            told(holder, rank)
        line = RankedLines("01", PATH, "tp=1", (spec_of({"line": 3}),))
        given = await ranked.give("alice (HTTP)", line)
        assert [record.id for record, _ in given] == ["r1"]
        assert [lines_sent(peers[r][0]) for r in range(4)] == [[], [[3]], [], []]

        told(holder, 3)  # rank 3's coordinates come: it gets the breakpoint then
        await until(lambda: lines_sent(peers[3][0]) == [[3]])
        told(holder, 1)  # said again: nothing new to send
        await until(lambda: not ranked._tasks)
        assert lines_sent(peers[1][0]) == [[3]]

        # alice's breakpoints for every rank sit beside: the job keeps those, not the ranked
        upstream = peers[1][1]
        key = ("setBreakpoints", PATH)
        await upstream.breakpoints.give("bob", key, [spec_of({"line": 9})], {}, beside_kept=True)
        assert lines_sent(peers[1][0])[-1] == [3, 9]
        sent = {"source": {"path": PATH}, "breakpoints": [{"line": 3}, {"line": 9}]}
        assert [b["line"] for b in unranked(upstream, "setBreakpoints", sent)["breakpoints"]] == [9]

        # Cleared: taken back from the ranks that had it, and no longer kept
        await ranked.give("alice (HTTP)", RankedLines("01", PATH, "tp=1", ()))
        assert lines_sent(peers[3][0])[-1] == [] and lines_sent(peers[1][0])[-1] == [9]
        assert ranked.kept == {}
        assert lines_sent(peers[0][0]) == lines_sent(peers[2][0]) == []
        await ranked.close()
