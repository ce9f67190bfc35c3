"""Mesh coordinates from the process groups a rank reports, laid out as torch's DeviceMesh
lays them out (one group per dimension and combination of the other coordinates, in mesh
order, described ``mesh_<dim>``); the e2e test reads them from a real 2 x 2 mesh on gloo."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from raydap.bridge.workers import meshes
from raydap.bridge.workers.process_groups import ProcessGroups
from raydap.bridge.workers.rank_sets import parse
from raydap.bridge.workers.records import BreakpointRecord
from raydap.bridge.workers.registry import Registry
from raydap.live.collectives import spans
from raydap.protocol.collectives import MAX_MESHES, GroupInfo, Identity, TorchMesh


def mesh_groups(shape: tuple[int, ...], dims: tuple[str, ...]) -> list[tuple[str, list[int]]]:
    """Each dimension's groups, in the order torch makes them: a dimension as large as the
    world reuses the default group (none made)."""
    world = math.prod(shape)
    grid = {c: i for i, c in enumerate(itertools.product(*map(range, shape)))}
    made = []
    for d, dim in enumerate(dims):
        if shape[d] == world:
            continue
        others = [range(n) for i, n in enumerate(shape) if i != d]
        for fixed in itertools.product(*others):
            at = list(fixed)
            made.append((dim, [grid[(*at[:d], k, *at[d:])] for k in range(shape[d])]))
    return made


def identity(rank: int, world: int, *built: tuple[tuple[int, ...], tuple[str, ...]]) -> Identity:
    """What ``rank`` reports after the job built these meshes: its own groups, in order."""
    groups = [GroupInfo(name="0", desc="default_pg", spans=((0, world, 1),))]
    count = 1
    for shape, dims in built:
        for dim, members in mesh_groups(shape, dims):
            if rank in members:
                runs = tuple((a, b, c) for a, b, c in spans(members))
                groups.append(GroupInfo(name=str(count), desc=f"mesh_{dim}", spans=runs))
            count += 1
    return Identity(rank=rank, world_size=world, groups=tuple(groups))


def unravel(rank: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    out = []
    for n in reversed(shape):
        out.append(rank % n)
        rank //= n
    return tuple(reversed(out))


def coords(identity: Identity) -> list[dict[str, int]]:
    return [place.coord_names() for place in meshes.places(identity)]


def test_rank_1_of_a_2_by_2_mesh_is_dp_0_tp_1_as_torch_says() -> None:
    found = identity(1, 4, ((2, 2), ("dp", "tp")))
    assert [g.desc for g in found.groups] == ["default_pg", "mesh_dp", "mesh_tp"]
    assert [g.ranks() for g in found.groups[1:]] == [[1, 3], [0, 1]]  # as checked on torch 2.13
    [place] = meshes.places(found)
    assert place.coord_names() == {"dp": 0, "tp": 1}
    assert [(a.dim, a.size, a.group) for a in place.axes] == [("dp", 2, "2"), ("tp", 2, "3")]
    assert meshes.text([place]) == "dp=0 tp=1"
    assert meshes.text([place.model_dump(mode="json")]) == "dp=0 tp=1"  # a record's JSON


@given(
    st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple),
    st.data(),
)
def test_coordinates_are_the_ranks_place_in_the_mesh(
    shape: tuple[int, ...], data: st.DataObject
) -> None:
    world = math.prod(shape)
    dims = tuple(f"d{i}" for i in range(len(shape)))
    rank = data.draw(st.integers(0, world - 1))
    found = meshes.places(identity(rank, world, (shape, dims)))
    # A dimension of size 1 is a group of one; a dimension as large as the world is torch's
    # default group, described by no dimension: those have no coordinate here.
    expected = {
        dim: at for dim, at, n in zip(dims, unravel(rank, shape), shape, strict=True) if n < world
    }
    assert (found[0].coord_names() if found else {}) == expected


@given(
    st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple),
    st.data(),
)
def test_a_mesh_torch_tells_gives_every_dimension_and_the_groups_own_peers(
    shape: tuple[int, ...], data: st.DataObject
) -> None:
    world = math.prod(shape)
    dims = tuple(f"d{i}" for i in range(len(shape)))
    rank = data.draw(st.integers(0, world - 1))
    from_groups = identity(rank, world, (shape, dims))
    told = TorchMesh(dims=dims, shape=shape, coord=unravel(rank, shape))
    [place] = meshes.places(from_groups.model_copy(update={"meshes": (told,)}))
    # Every dimension, the whole world's included (the groups alone leave it out)
    assert place.coord_names() == dict(zip(dims, unravel(rank, shape), strict=True))
    derived = {a.dim: a for p in meshes.places(from_groups) for a in p.axes}
    for axis in place.axes:
        assert [r for r in range(world) if r in axis] == sorted(
            r for r in range(world)
            if all(a == b for i, (a, b) in enumerate(zip(unravel(r, shape), told.coord,
                                                         strict=True)) if dims[i] != axis.dim)
        )  # fmt: skip
        if axis.dim in derived:  # the same group torch made for it, named as the worker did
            assert (axis.group, axis.spans) == (derived[axis.dim].group, derived[axis.dim].spans)
        elif axis.size == world:
            assert axis.group == "0"  # the default group


def test_a_mesh_torch_tells_that_does_not_fit_the_world_in_order_is_not_used() -> None:
    found = identity(1, 4, ((2, 2), ("dp", "tp")))
    odd = TorchMesh(dims=("dp", "tp"), shape=(2, 2), coord=(1, 1))  # rank 3's place, not 1's
    assert coords(found.model_copy(update={"meshes": (odd,)})) == [{"dp": 0, "tp": 1}]


def test_two_meshes_with_the_same_names_are_told_apart_and_the_first_is_bare() -> None:
    # verl: a (dp, sp) mesh for its model, then a (dp, tp) mesh for rollout, on 8 ranks
    found = identity(5, 8, ((4, 2), ("dp", "sp")), ((2, 4), ("dp", "tp")))
    assert coords(found) == [{"dp": 2, "sp": 1}, {"mesh1.dp": 1, "mesh1.tp": 1}]
    facts = meshes.facts(5, None, meshes.places(found))
    assert facts.coords["dp"] == 2 and facts.coords["mesh1.dp"] == 1 and facts.coords["tp"] == 1
    assert parse("dp=2 sp=1").matches(facts) and parse("mesh1.dp=1").matches(facts)
    assert not parse("mesh1.dp=2").matches(facts)


def test_a_dimension_asked_for_by_name_gives_the_coordinate_rank_sets_would_match() -> None:
    places = meshes.places(identity(5, 8, ((4, 2), ("dp", "sp")), ((2, 4), ("dp", "tp"))))
    asked = {dim: meshes.coordinate(places, meshes.dimension(dim))
             for dim in ("dp", "mesh1.dp", "tp", "pp")}  # fmt: skip
    assert asked == {"dp": 2, "mesh1.dp": 1, "tp": 1, "pp": None}
    for bad in ("", "pp=1", "1pp", "tp group", "x" * 65):
        with pytest.raises(ValueError, match="a mesh dimension is a name such as pp"):
            meshes.dimension(bad)


def test_a_group_named_by_a_member_matches_the_ranks_of_that_group() -> None:
    world, shape = 8, (2, 2, 2)
    dims = ("pp", "dp", "tp")
    matched = []
    for rank in range(world):
        facts = meshes.facts(rank, None, meshes.places(identity(rank, world, (shape, dims))))
        if parse("group=mesh_tp:5").matches(facts):
            matched.append(rank)
    assert matched == [4, 5]  # the tp group of rank 5: pp 1, dp 0
    facts = meshes.facts(6, "actor", meshes.places(identity(6, world, (shape, dims))))
    assert parse("pp=1 dp=(1) actor").matches(facts) and not parse("tp=1:").matches(facts)


def test_without_a_mesh_a_rank_is_its_number() -> None:
    bare = Identity(rank=3, world_size=4, groups=(
        GroupInfo(name="0", desc="default_pg", spans=((0, 4, 1),)),
        GroupInfo(name="1", desc="", spans=((2, 4, 1),)),
    ))  # fmt: skip
    assert meshes.places(bare) == ()
    facts = meshes.facts(3, None, ())
    assert parse("2-3").matches(facts) and not parse("tp=0").matches(facts)


def test_a_hostile_workers_groups_make_a_bounded_mesh_field() -> None:
    """What a worker says is its own say, and every record goes to every client."""
    odd = [GroupInfo(name=str(i), desc=f"mesh_d{i}", spans=((3, 4, 1),)) for i in range(40)]
    odd += [
        GroupInfo(name="x", desc="mesh_<img src=x onerror=alert(1)>", spans=((3, 4, 1),)),
        GroupInfo(name="y", desc="mesh_many", spans=tuple((r, r + 1, 1) for r in range(100))),
    ]
    found = meshes.places(Identity(rank=3, world_size=200, groups=tuple(odd)))
    assert len(found) <= meshes.MAX_MESHES
    assert all(len(place.axes) <= meshes.MAX_AXES for place in found)
    dims = {axis.dim for place in found for axis in place.axes}
    assert "many" not in dims and not any("<" in dim for dim in dims)
    assert meshes.text(found).split()[0] == "d0=0"  # the rest still named, as rank sets write


def test_a_hostile_workers_told_meshes_are_refused_or_left_out() -> None:
    """The meshes a worker's torch tells are its own say too: one over the bounds or out of
    shape drops the whole identity (the record stays as it was), and a mesh larger than the
    world, off the world's order, or with names a rank set cannot write is not used."""
    registry = Registry()
    registry.put(BreakpointRecord(id="w1", node_ip="127.0.0.1", paused_since=0.0))
    groups = ProcessGroups(registry)
    mesh = {"dims": ["dp", "tp"], "shape": [2, 2], "coord": [0, 1]}
    malformed = [
        [mesh] * (MAX_MESHES + 1),  # too many meshes
        [{"dims": ["d"] * 17, "shape": [1] * 17, "coord": [0] * 17}],  # too many dimensions
        [{**mesh, "coord": [0, 2]}],  # a coordinate outside its mesh
        [{**mesh, "shape": [2]}],  # names, shape and coordinate of different lengths
        [{**mesh, "shape": [2, 0]}],  # an empty dimension
    ]
    for told in malformed:
        groups.told("w1", {"identity": {"rank": 1, "world_size": 4, "meshes": told}})
        record = registry.get("w1")
        assert record is not None and record.rank is None and record.mesh == ()
    groups.told("w1", {"identity": {"rank": 1, "world_size": 4, "meshes": [mesh]}})
    record = registry.get("w1")
    assert record is not None and record.rank == 1 and meshes.text(record.mesh) == "dp=0 tp=1"

    def told(*meshes_told: dict[str, object]) -> list[dict[str, int]]:
        said = Identity.model_validate({"rank": 1, "world_size": 4, "meshes": meshes_told})
        return coords(said)

    assert told({"dims": ["dp"], "shape": [10**18], "coord": [1]}) == []  # larger than the world
    assert told({**mesh, "coord": [1, 0]}) == []  # coordinate 2 of the world's order, not 1
    odd = {"dims": ["dp", "<img src=x onerror=alert(1)>"], "shape": [2, 2], "coord": [0, 1]}
    assert told(odd) == [{"dp": 0}]
