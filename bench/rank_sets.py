"""Benchmarks of rank sets (issue 56; figures in docs/performance.md).

    python -m bench.rank_sets [--smoke] [--json PATH]

Simulated ranks, since 10,000 real ones do not run here: records and process groups shaped as
a real job's (the groups laid out as torch's DeviceMesh lays them out, the code that reads
them the bridge's own).

S1  matching a rank set against 10,000 ranks, for several rank sets: the matcher alone (each
    rank's facts as its record keeps them), and through ``WorkerFilter`` as every door does
    (the text parsed, then each record matched); the time for all 10,000, median and worst of
    20 runs.
S2  deriving the mesh coordinates of 1,000 ranks (a 10 x 10 x 10 (pp, dp, tp) mesh) from
    their identities as the bridge receives them: checking each answer's JSON
    (``read_identity``) and then ``meshes.places``, each timed apart, for all 1,000; once
    from their groups alone, once with the mesh torch tells beside them (``init_device_mesh``
    seen by the live hook), which must give the same coordinates.
"""

from __future__ import annotations

import math
import os
import platform
import statistics
import sys
import time
from typing import Any

from bench.harness import run_benchmark
from raydap.bridge.workers import meshes
from raydap.bridge.workers.filters import WorkerFilter
from raydap.bridge.workers.rank_sets import parse
from raydap.bridge.workers.records import BreakpointRecord, RecordState
from raydap.protocol.collectives import Identity, read_identity

RANK_SETS = ("0-4999,9000-9999", "pp=1 tp=0:4 dp=(1,3)", "group=mesh_tp:5", "actor pp=3")


def identity_body(
    rank: int, shape: tuple[int, ...], dims: tuple[str, ...], *, told: bool = False
) -> dict[str, Any]:
    """What a live rank of a row-major mesh sends: its default group and, along each
    dimension, the group of the ranks differing from it there only (one strided run); with
    ``told``, the mesh as torch tells it too."""
    world = math.prod(shape)
    groups: list[dict[str, Any]] = [{"name": "0", "desc": "default_pg", "spans": [[0, world, 1]]}]
    stride = world
    coords = []
    for d, (size, dim) in enumerate(zip(shape, dims, strict=True)):
        stride //= size
        coord = rank // stride % size
        coords.append(coord)
        base = rank - coord * stride
        groups.append({"name": str(d + 1), "desc": f"mesh_{dim}",
                       "spans": [[base, base + (size - 1) * stride + 1, stride]]})  # fmt: skip
    said: dict[str, Any] = {"rank": rank, "world_size": world, "backend": "nccl",
                            "world": "10.0.0.1:29500", "groups": groups}  # fmt: skip
    if told:
        said["meshes"] = [{"dims": list(dims), "shape": list(shape), "coord": coords}]
    return {"identity": said, "job": "02000000"}


def held(ranks: int, shape: tuple[int, ...], dims: tuple[str, ...]) -> list[BreakpointRecord]:
    """``ranks`` paused records, each with its mesh place as the bridge keeps it."""
    records = []
    for rank in range(ranks):
        said = read_identity(identity_body(rank, shape, dims))
        assert said is not None and said.identity is not None
        records.append(BreakpointRecord(
            id=f"{rank:012x}", state=RecordState.PAUSED, job_id="02000000", node_ip="10.0.0.1",
            pid=10_000 + rank, paused_since=0.0, rank=rank, role="actor" if rank % 2 else "critic",
            world_size=ranks, mesh=meshes.places(said.identity),
        ))  # fmt: skip
    return records


def s1_match(records: list[BreakpointRecord], runs: int) -> dict[str, Any]:
    """Each rank set through a door's filter (records), and the matcher alone (each rank's
    facts made beforehand, as the records keep them)."""
    found: dict[str, Any] = {"ranks": len(records)}
    facts = [r.rank_facts() for r in records]
    for text in RANK_SETS:
        door, matcher, matched = [], [], 0
        for _ in range(runs):
            start = time.perf_counter()
            where = WorkerFilter(ranks=text)
            matched = sum(1 for r in records if where.matches(r))
            door.append(time.perf_counter() - start)
            start = time.perf_counter()
            rank_set = parse(text)
            assert sum(1 for f in facts if rank_set.matches(f)) == matched
            matcher.append(time.perf_counter() - start)
        found[text] = {
            "matched": matched,
            "matcher_median_ms": round(statistics.median(matcher) * 1e3, 2),
            "matcher_max_ms": round(max(matcher) * 1e3, 2),
            "filter_median_ms": round(statistics.median(door) * 1e3, 2),
            "filter_max_ms": round(max(door) * 1e3, 2),
        }
    return found


def s2_derive(ranks: int, runs: int) -> dict[str, Any]:
    shape, dims = (10, 10, 10), ("pp", "dp", "tp")
    found: dict[str, Any] = {"ranks": ranks}
    placed_by: dict[str, list[dict[str, int]]] = {}
    for told, name in ((False, ""), (True, "told_")):
        bodies = [identity_body(r % math.prod(shape), shape, dims, told=told) for r in range(ranks)]
        read_took, place_took = [], []
        for _ in range(runs):
            start = time.perf_counter()
            identities: list[Identity] = []
            for body in bodies:
                said = read_identity(body)
                assert said is not None and said.identity is not None
                identities.append(said.identity)
            read_took.append(time.perf_counter() - start)
            start = time.perf_counter()
            placed = [meshes.places(identity) for identity in identities]
            place_took.append(time.perf_counter() - start)
            assert all(len(p) == 1 and len(p[0].axes) == 3 for p in placed)
        placed_by[name] = [meshes.coords(p) for p in placed]
        found |= {
            f"{name}read_identity_median_ms": round(statistics.median(read_took) * 1e3, 2),
            f"{name}places_median_ms": round(statistics.median(place_took) * 1e3, 2),
            f"{name}places_max_ms": round(max(place_took) * 1e3, 2),
        }
    assert placed_by[""] == placed_by["told_"]  # torch's account says what the groups say
    return found


async def run(smoke: bool) -> dict[str, Any]:
    runs = 3 if smoke else 20
    return {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "smoke": smoke,
        "s1": s1_match(held(10_000, (10, 25, 40), ("pp", "dp", "tp")), runs),
        "s2": s2_derive(1000, runs),
    }


if __name__ == "__main__":
    sys.exit(run_benchmark(__doc__, run))
