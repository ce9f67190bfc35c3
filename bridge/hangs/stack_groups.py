"""Merged stacks grouped by one device-mesh dimension: one tree per coordinate, so a person
sees where each pipeline stage is (``pp=0`` in ``forward``, ``pp=1`` waiting in ``recv``)
rather than one tree of every rank (sans-I/O)."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel

from raydap.bridge.cluster.pyspy import Frame
from raydap.bridge.hangs.stack_tree import StackNode, merge


class StackGroup(BaseModel):
    """The workers at one coordinate along the dimension asked for (``coord`` None: workers
    with no coordinate along it, such as ranks of no mesh), and their stacks merged."""

    coord: int | None
    workers: list[str]
    tree: StackNode


def by_coordinate(
    read: Mapping[str, list[Frame]], coords: Mapping[str, int | None]
) -> list[StackGroup]:
    """``read`` (stacks by worker, or ``worker/thread``) merged apart for each coordinate of
    ``coords`` (by worker), in coordinate order, workers with none last."""
    apart: dict[int | None, dict[str, list[Frame]]] = {}
    for key, frames in read.items():
        apart.setdefault(coords.get(key.split("/", 1)[0]), {})[key] = frames
    order = sorted(apart, key=lambda c: (c is None, c or 0))
    return [
        StackGroup(coord=c, workers=sorted({k.split("/", 1)[0] for k in apart[c]}),
                   tree=merge(apart[c]))
        for c in order
    ]  # fmt: skip
