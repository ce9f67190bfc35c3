"""Merged stacks apart for each coordinate along one mesh dimension."""

from __future__ import annotations

from raydap.bridge.cluster.pyspy import Frame
from raydap.bridge.hangs.stack_groups import by_coordinate


def stack(*lines: int) -> list[Frame]:
    """Innermost first, as workers report them."""
    return [Frame(function=f"f{line}", path="train.py", line=line) for line in lines]


def test_each_pipeline_stage_is_a_tree_of_its_own_and_ranks_of_no_mesh_come_last() -> None:
    read = {
        "w0": stack(30, 10), "w1": stack(30, 10),  # pp 0: in forward
        "w2": stack(40, 10), "w3/MainThread": stack(41, 10),  # pp 1: waiting, apart
        "w9": stack(50),  # no mesh
    }  # fmt: skip
    coords = {"w0": 0, "w1": 0, "w2": 1, "w3": 1, "w9": None}
    groups = by_coordinate(read, coords)
    assert [(g.coord, g.workers) for g in groups] == [
        (0, ["w0", "w1"]), (1, ["w2", "w3"]), (None, ["w9"]),
    ]  # fmt: skip
    [outer] = groups[0].tree.children
    assert (outer.line, [c.line for c in outer.children]) == (10, [30])
    [outer] = groups[1].tree.children
    assert sorted(c.line for c in outer.children) == [40, 41]
    assert groups[1].tree.workers == ["w2", "w3/MainThread"]


def test_a_worker_not_known_to_the_coordinates_is_one_with_none() -> None:
    [group] = by_coordinate({"w5": stack(1)}, {})
    assert (group.coord, group.workers) == (None, ["w5"])
