"""Where a rank sits in its job's device meshes, derived from the process groups it reports.

torch's ``DeviceMesh`` gives each rank one process group per mesh dimension, described
``mesh_<dim>`` (``mesh_dim_0`` where the dimension has no name), holding the ranks that differ
from it along that dimension only, in mesh order: the rank's place in that group is its
coordinate. Rank 1 of a 2 x 2 (dp, tp) mesh is in ``mesh_dp`` [1, 3] and ``mesh_tp`` [0, 1]:
dp 0, tp 1. Nothing but the groups a live worker already reports is needed (sans-I/O).

A job may build several meshes, with the same dimension names (verl does): a rank's mesh groups
are read in the order it made them, and a dimension seen again, or one that would make the
mesh larger than the world, starts the next mesh. Meshes are numbered in that order, the same
on every rank (each is built by all of them together).

A dimension that spans the whole world reuses the default group, which torch does not describe
by dimension: the groups cannot name it. Where the worker's torch tells its meshes (the live
hook keeps each one ``init_device_mesh`` builds, :mod:`raydap.live.collectives`), their names,
shapes and the rank's coordinates are used instead, every dimension with its coordinate: the
whole world's is the rank's place in the default group. ``init_device_mesh`` lays the world's
ranks out in order, row by row, so each dimension's peers are one run of ranks.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError

from raydap.bridge.workers.rank_sets import NAME, RankFacts
from raydap.protocol.collectives import GroupInfo, Identity, Span, TorchMesh

#: How torch describes a mesh dimension's group: ``mesh_<dim>``.
PREFIX = "mesh_"
#: What one record carries at most: meshes, dimensions each, and runs of ranks a dimension's
#: group is (a mesh dimension's group is one run, strided or not; a few where a job maps ranks).
MAX_MESHES, MAX_AXES, MAX_SPANS = 16, 16, 64
#: A dimension's name as rank sets write it (``tp``, ``dim_0``).
_DIM = re.compile(NAME)
#: The copy of the default group torch makes for a dimension spanning the world (CUDA with a
#: gloo default group): it says no dimension.
WHOLE_WORLD = "mesh_default"


class MeshAxis(BaseModel):
    """A rank's coordinate along one dimension, and its peers along it (the dimension's group:
    torch's name for it and its global ranks, in mesh order)."""

    model_config = ConfigDict(frozen=True)
    dim: str
    coord: int
    size: int
    group: str
    spans: tuple[Span, ...]

    def __contains__(self, rank: object) -> bool:
        if not isinstance(rank, int):
            return False
        for start, stop, step in self.spans:  # (a loop: asked of ten thousand ranks at once)
            if start <= rank < stop and (rank - start) % step == 0:
                return True
        return False


class MeshPlace(BaseModel):
    """A rank's place in one mesh of its job: ``mesh`` 0 is the first the job built."""

    model_config = ConfigDict(frozen=True)
    mesh: int
    axes: tuple[MeshAxis, ...]

    def coord_names(self) -> dict[str, int]:
        """``{"tp": 1}`` for the first mesh, ``{"mesh1.tp": 1}`` for the next: as rank sets
        and every door write them."""
        prefix = f"mesh{self.mesh}." if self.mesh else ""
        return {prefix + axis.dim: axis.coord for axis in self.axes}


def places(identity: Identity) -> tuple[MeshPlace, ...]:
    """Where ``identity``'s rank sits in each mesh its torch tells, else each mesh its groups
    describe (none: no mesh). A worker's groups are its own say: every record carries this to
    every client, so it is bounded (:data:`MAX_MESHES` meshes of :data:`MAX_AXES` dimensions;
    a dimension with a name a rank set cannot write, or of over :data:`MAX_SPANS` runs, is
    left out)."""
    told = [axes for mesh in identity.meshes if (axes := _told(mesh, identity))]
    if told:
        return tuple(
            MeshPlace.model_construct(mesh=i, axes=tuple(axes[:MAX_AXES]))
            for i, axes in enumerate(told[:MAX_MESHES])
        )
    meshes: list[list[MeshAxis]] = [[]]
    for group in identity.groups:
        axis = _axis(group, identity.rank)
        if axis is None:
            continue
        current = meshes[-1]
        seen = any(a.dim == axis.dim for a in current)
        if seen or math.prod(a.size for a in current) * axis.size > identity.world_size:
            meshes.append(current := [])
        current.append(axis)
    # Built from a checked identity: not checked again (a thousand ranks say theirs at once)
    found = [axes[:MAX_AXES] for axes in meshes if axes][:MAX_MESHES]
    return tuple(MeshPlace.model_construct(mesh=i, axes=tuple(a)) for i, a in enumerate(found))


def _told(mesh: TorchMesh, identity: Identity) -> list[MeshAxis]:
    """The axes of a mesh torch told, each dimension's peers the run of ranks that differ from
    this one along it only; none where the mesh is not laid over the world in order, or is
    larger than the world."""
    if math.prod(mesh.shape) > identity.world_size:
        return []  # more ranks than the world: not a mesh of this job's ranks
    strides = [math.prod(mesh.shape[d + 1 :]) for d in range(len(mesh.shape))]
    rank = identity.rank
    if sum(c * s for c, s in zip(mesh.coord, strides, strict=True)) != rank:
        return []
    # Each dimension's group: the one described by it, else the one of its ranks (the default)
    by_desc = {(group.spans, group.desc): group.name for group in identity.groups}
    by_spans = {group.spans: group.name for group in identity.groups}
    axes = []
    for dim, size, coord, stride in zip(mesh.dims, mesh.shape, mesh.coord, strides, strict=True):
        if not _DIM.fullmatch(dim):
            continue
        start = rank - coord * stride  # as the worker writes runs (raydap.live.collectives)
        span = (start, start + (size - 1) * stride + 1, stride if size > 1 else 1)
        axes.append(MeshAxis.model_construct(
            dim=dim, coord=coord, size=size, spans=(span,),
            group=by_desc.get(((span,), PREFIX + dim)) or by_spans.get((span,), ""),
        ))  # fmt: skip
    return axes


def _axis(group: GroupInfo, rank: int) -> MeshAxis | None:
    if not group.desc.startswith(PREFIX) or group.desc == WHOLE_WORLD:
        return None
    coord = group.index(rank)
    if coord is None:
        return None
    dim = group.desc.removeprefix(PREFIX)
    if not _DIM.fullmatch(dim) or len(group.spans) > MAX_SPANS:
        return None
    return MeshAxis.model_construct(
        dim=dim, coord=coord, size=group.size, group=group.name, spans=group.spans
    )


def coords(meshes: Iterable[MeshPlace]) -> dict[str, int]:
    """``{"dp": 0, "tp": 1}``: every coordinate of a rank, as rank sets name them."""
    return {name: coord for place in meshes for name, coord in place.coord_names().items()}


def text(meshes: Iterable[MeshPlace | Mapping[str, object]]) -> str:
    """``dp=0 tp=1``, as a rank set names that place (records' JSON as well as models)."""
    words = []
    for place in meshes:
        try:
            found = place if isinstance(place, MeshPlace) else MeshPlace.model_validate(place)
        except ValidationError:  # a bridge's answer this client cannot read: not shown
            continue
        words += [f"{name}={coord}" for name, coord in found.coord_names().items()]
    return " ".join(words)


def dimension(text: str) -> str:
    """``text`` as a mesh dimension's name (``pp``, ``mesh1.tp``: as rank sets write it)."""
    if not _DIM.fullmatch(text):
        raise ValueError(f"a mesh dimension is a name such as pp or mesh1.tp, not {text[:40]!r}")
    return text


#: A dimension asked for by name, where a door's arguments are a model.
DimText = Annotated[str, AfterValidator(dimension)]


def coordinate(meshes: Iterable[MeshPlace], dim: str) -> int | None:
    """The coordinate along ``dim`` as rank sets name it (``tp``: the first mesh that has it;
    ``mesh1.tp``), or None."""
    return facts(None, None, meshes).coords.get(dim)


def facts(rank: int | None, role: str | None, meshes: Iterable[MeshPlace]) -> RankFacts:
    """What a rank set can match of a rank: its number, role, coordinates (a dimension's bare
    name means the first mesh that has it) and its mesh groups by description."""
    coords: dict[str, int] = {}
    groups: dict[str, MeshAxis] = {}
    for place in meshes:
        coords.update(place.coord_names())
        for axis in place.axes:
            coords.setdefault(axis.dim, axis.coord)
            groups.setdefault(PREFIX + axis.dim, axis)
    return RankFacts(rank=rank, role=role, coords=coords, groups=groups)
