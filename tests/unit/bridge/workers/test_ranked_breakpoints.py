"""Breakpoints on a rank set, over four scripted debugpy peers laid out on a 2 x 2 (dp, tp)
mesh: given to the ranks the set names only, kept for a rank whose coordinates come later,
and left out of what the job keeps for its later workers."""

from __future__ import annotations

from contextlib import AsyncExitStack

from raydap.adapter import Upstream
from raydap.adapter.upstream.books import spec_of
from raydap.bridge.cluster.dashboard import WorkerRow
from raydap.bridge.workers.holder import Holder
from raydap.bridge.workers.live import LiveWorkers, unranked
from raydap.bridge.workers.ranked_breakpoints import RankedBreakpoints, RankedLines
from raydap.bridge.workers.records import BreakpointRecord, RecordState
from raydap.bridge.workers.registry import Registry
from tests.unit.adapter.peer import PKG, ScriptedPeer, held_peer
from tests.unit.bridge.workers.marks import MemoryMarks
from tests.unit.bridge.workers.test_meshes import identity
from tests.waiting import until

PATH = f"{PKG}/train.py"


def told(holder: Holder, rank: int) -> None:
    """Rank ``rank`` says its groups, as a live worker does once its job made its mesh."""
    said = identity(rank, 4, ((2, 2), ("dp", "tp"))).model_dump(mode="json")
    holder.process_groups.told(f"r{rank}", {"identity": said, "job": "01"})


async def _none() -> list[WorkerRow]:
    return []


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


async def test_a_role_learned_later_and_a_worker_held_later_get_a_breakpoint_on_the_role() -> None:
    registry = Registry()
    holder = Holder(registry)
    ranked = RankedBreakpoints(holder)

    def worker(rid: str, role: str | None = None) -> BreakpointRecord:
        return BreakpointRecord(id=rid, node_ip="10.0.0.1", paused_since=0, live=True,
                                state=RecordState.RUNNING, job_id="01", role=role)  # fmt: skip

    async with AsyncExitStack() as stack:
        first, upstream = await stack.enter_async_context(held_peer())
        registry.put(worker("a"))
        holder.upstreams["a"] = upstream
        await ranked.give(
            "alice (HTTP)", RankedLines("01", PATH, "critic", (spec_of({"line": 3}),))
        )
        assert lines_sent(first) == []  # no role known yet: not a critic
        registry.put(worker("a", role="critic"))  # its verl role, learned from its task
        await until(lambda: lines_sent(first) == [[3]])

        later, held = await stack.enter_async_context(held_peer())
        registry.put(worker("b", role="critic"))
        ranked.held("b", held)  # as the bridge's live workers tell it, then hand it out
        holder.upstreams["b"] = held
        await until(lambda: lines_sent(later) == [[3]])
        registry.put(worker("b", role="actor"))  # (a role that changes: taken back)
        await until(lambda: lines_sent(later) == [[3], []])
        await ranked.close()


async def test_breakpoints_on_a_rank_set_are_saved_with_the_kept_ones_and_taken_back() -> None:
    marks = MemoryMarks()

    def bridge() -> tuple[LiveWorkers, RankedBreakpoints]:
        holder = Holder(Registry())
        live = LiveWorkers(holder, listeners=_none, marks=marks, save_after=0.01)
        live.ranked = RankedBreakpoints(holder)
        live.ranked.on_change = live.save_soon
        return live, live.ranked

    first, ranked = bridge()
    first.keep("setBreakpoints", {"source": {"path": PATH}, "breakpoints": [{"line": 9}]}, "01")
    await ranked.give("alice (HTTP)", RankedLines("01", PATH, "tp=1", (spec_of({"line": 3}),)))
    await until(lambda: len(marks.breakpoints) == 2, what="both kinds saved")
    marks.breakpoints += [{"ranked": {"job": "01", "owner": "x", "path": PATH, "ranks": "tp=(",
                                      "specs": ['{"line": 4}']}},  # not a rank set
                          {"ranked": "nonsense"}]  # fmt: skip

    restarted, taken_back = bridge()
    await restarted.restore()
    assert taken_back.kept == ranked.kept  # the rank set's, and nothing made up
    assert restarted.configuration == first.configuration  # the job's, apart as before
    await ranked.close()
    await taken_back.close()
