"""A hang's collectives as a grid: the blamed group's ranks against their last numbers.

Pure: built from the recorders the watch read for the verdict (:class:`RankDump`) and its
collective verdict. Each cell is the op a rank called at a number of the group's sequence, or
none; the cell of a rank that never came to the verdict's number, and of one that called
something else there, is marked. Ranks whose rows agree cell for cell share one row, so a
thousand ranks that agree are one line and only the odd ones stand apart. Each row says its
ranks' global numbers and the device-mesh coordinates they share (from the groups each rank
reported with its recorder), so a row reads as the mesh places it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from raydap.bridge.hangs.desync import Collective, RankDump, read_group
from raydap.bridge.workers import meshes

#: Numbers shown: the verdict's and those before it (one after, where a rank went further).
COLUMNS = 8

Mark = Literal["missing", "mismatch"]


class Cell(BaseModel):
    """What one rank did at one number: ``op`` None when it has no entry there."""

    model_config = ConfigDict(frozen=True)
    op: str | None = None
    #: The op completed (NCCL) or was let go (gloo); False while it waits.
    done: bool = False
    mark: Mark | None = None


class Row(BaseModel):
    """Ranks (of the group) whose cells are the same; their workers, where reported."""

    ranks: list[int]
    #: The same ranks' global numbers, in the same order.
    global_ranks: list[int]
    workers: list[str | None]
    cells: list[Cell]
    #: The mesh coordinates every rank of the row shares (``{"dp": 1}``), as rank sets write
    #: them; none without a mesh.
    coords: dict[str, int] = Field(default_factory=dict)


class Grid(BaseModel):
    """``GET /api/v1/hangs/{job}/grid``."""

    job: str
    group_desc: str
    backend: str
    #: The number the verdict is about, and the op the agreeing ranks called there.
    seq: int
    op: str
    summary: str
    #: The columns' numbers, in order.
    seqs: list[int]
    rows: list[Row]


def build(job: str, collective: Collective, dumps: Sequence[RankDump]) -> Grid:
    """The grid of ``collective``'s group from the ranks' recorders."""
    read = read_group(dumps, collective)
    top = max((r.last for r in read), default=collective.seq)
    last = max(collective.seq, min(top, collective.seq + 1))
    seqs = list(range(max(1, last - COLUMNS + 1), last + 1))
    odd = {m.rank for m in collective.mismatch}
    missing = set(collective.missing)
    rows: dict[tuple[Cell, ...], Row] = {}
    coords: dict[tuple[Cell, ...], list[dict[str, int]]] = {}
    identities = {d.worker: d.identity for d in dumps}

    def add(rank: int, global_rank: int, worker: str | None, cells: tuple[Cell, ...]) -> None:
        row = rows.setdefault(cells, Row(ranks=[], global_ranks=[], workers=[], cells=list(cells)))
        row.ranks.append(rank)
        row.global_ranks.append(global_rank)
        row.workers.append(worker)
        identity = identities.get(worker or "")
        places = meshes.places(identity) if identity is not None else ()
        coords.setdefault(cells, []).append(meshes.coords(places))

    for member in sorted(read, key=lambda r: r.rank):
        cells = []
        for seq in seqs:
            entry = member.entries.get(seq)
            here = seq == collective.seq
            if entry is None:
                mark: Mark | None = "missing" if here and member.rank in missing else None
                cells.append(Cell(mark=mark))
            else:
                mark = "mismatch" if here and member.rank in odd else None
                cells.append(Cell(op=entry.op, done=member.done(entry), mark=mark))
        add(member.rank, member.global_rank, member.worker, tuple(cells))
    for unreported in (m for m in collective.members if m.worker is None):
        blank = tuple(
            Cell(mark="missing" if s == collective.seq and unreported.rank in missing else None)
            for s in seqs
        )
        add(unreported.rank, unreported.global_rank, None, blank)
    for key, row in rows.items():
        row.coords = shared(coords[key])
    return Grid(
        job=job, group_desc=collective.group_desc, backend=collective.backend,
        seq=collective.seq, op=collective.op, summary=collective.summary, seqs=seqs,
        rows=sorted(rows.values(), key=lambda row: row.ranks[0]),
    )  # fmt: skip


def shared(places: list[dict[str, int]]) -> dict[str, int]:
    """The coordinates all of ``places`` have alike (none where one of them has none)."""
    first, *rest = places
    return {dim: coord for dim, coord in first.items() if all(p.get(dim) == coord for p in rest)}
