"""A hang's collectives as a grid, from recorders of real gloo ranks and of real NCCL ranks on
an H100 (recordings/), and a thousand NCCL ranks written as torch writes them."""

from __future__ import annotations

from raydap.bridge.hangs.desync import judge
from raydap.bridge.hangs.grid import COLUMNS, Cell, build
from tests.unit.bridge.hangs.test_desync import (
    as_tp_group_of_dp_1,
    nccl_entry,
    nccl_rank,
    recorded,
)
from tests.unit.bridge.hangs.test_nccl import dumps_of, replies


def test_the_rank_that_never_joined_has_the_marked_empty_cell() -> None:
    dumps = recorded("skip")
    [collective] = judge(dumps)
    grid = build("01000000", collective, dumps)
    assert (grid.seq, grid.op, grid.group_desc) == (10, "all_reduce", "default_pg")
    assert grid.seqs == list(range(10 - COLUMNS + 1, 11)) and grid.summary == collective.summary
    at = grid.seqs.index(10)
    [skipped] = [row for row in grid.rows if row.ranks == [2]]
    assert skipped.cells[at] == Cell(mark="missing") and skipped.workers == ["w2"]
    assert skipped.cells[at - 1].op == "all_reduce"  # it did come to #9
    [others] = [row for row in grid.rows if row.ranks != [2]]
    assert others.ranks == [0, 1, 3]  # the three that agree are one row
    assert others.cells[at] == Cell(op="all_reduce", done=False)  # they wait in it


def test_rows_say_their_global_ranks_and_the_mesh_coordinates_they_share() -> None:
    dumps = as_tp_group_of_dp_1(recorded("skip"))
    [collective] = judge(dumps)
    grid = build("01000000", collective, dumps)
    rows = {tuple(row.ranks): (row.global_ranks, row.coords) for row in grid.rows}
    assert rows == {(0, 1, 3): ([4, 5, 7], {"dp": 1}), (2,): ([6], {"dp": 1, "tp": 2})}


def test_the_rank_that_called_another_op_has_its_odd_op_marked() -> None:
    dumps = recorded("mismatch")
    [collective] = judge(dumps)
    grid = build("01000000", collective, dumps)
    at = grid.seqs.index(6)
    [odd] = [row for row in grid.rows if row.ranks == [1]]
    assert odd.cells[at].op == "broadcast" and odd.cells[at].mark == "mismatch"
    assert all(row.cells[at].mark is None for row in grid.rows if row.ranks != [1])


def test_a_thousand_ranks_that_agree_are_one_row_and_the_one_missing_stands_apart() -> None:
    size = 1000
    dumps = [
        nccl_rank(rank, [nccl_entry(seq, state="completed" if seq < 12 else "started")
                         for seq in range(1, 12 if rank == 517 else 13)], world_size=size)
        for rank in range(size)
    ]  # fmt: skip
    [collective] = judge(dumps)
    grid = build("02000000", collective, dumps)
    assert [len(row.ranks) for row in grid.rows] == [size - 1, 1]
    [late] = [row for row in grid.rows if row.ranks == [517]]
    assert late.cells[grid.seqs.index(12)] == Cell(mark="missing")
    assert grid.rows[0].cells[grid.seqs.index(11)] == Cell(op="all_reduce", done=True)


def test_nccls_own_recorder_marks_the_rank_of_each_recorded_gpu_hang() -> None:
    """The grid reads NCCL's Flight Recorder, as the verdict does: each H100 recording's rank
    is marked where the verdict names it, and the ranks that agree share a row."""
    marked = {}
    for case in ("skip", "mismatch", "straggler"):
        dumps = dumps_of(replies(case))
        [collective] = judge(dumps)
        grid = build("01000000", collective, dumps)
        at = grid.seqs.index(collective.seq)
        assert grid.seqs[-1] >= collective.seq
        marked[case] = sorted(
            (row.ranks, row.cells[at].mark, row.cells[at].op)
            for row in grid.rows if row.cells[at].mark
        )  # fmt: skip
        assert sorted(len(row.ranks) for row in grid.rows) == [1, 3], case
    assert marked == {
        "skip": [([2], "missing", None)],
        "mismatch": [([1], "mismatch", "broadcast")],
        "straggler": [([3], "missing", None)],
    }
