"""Where a hung job's ranks stopped agreeing, from their Flight Recorders (sans-I/O).

Every process group numbers its collectives in the order each rank calls them (torch's
``collective_seq_id``; point-to-point ops count apart, ``p2p_seq_id``), and each backend of a
group apart (a ``"cpu:gloo,cuda:nccl"`` group has a gloo #1 and an NCCL #1). Ranks that agree call
the same op, on tensors of the same sizes and dtypes, at every number. So the place a job hung
is the first number, in some group, at which its ranks disagree:

- a rank never arrives (its last number is lower): the rank that skipped a collective, or
  that is stuck elsewhere, or that finished;
- a rank called another op there (a ``broadcast`` where the others ``all_reduce``), or the
  same op on other sizes or dtypes.

Call sites are shown, never compared: the same collective is often called from different
lines. With no disagreement, the first number some rank still waits at is the answer (all
ranks came; the wait is elsewhere). One code path for gloo and NCCL: an op is done when its
state says ``completed`` (NCCL), when torch retired it (gloo), or when the group's status says
it completed.

A job may hold several worlds (verl's worker groups each have a rank 0): groups are told apart
by the store their world met at. Ranks in a verdict's fields are ranks of its group; its
summary names a device mesh's group by its global ranks, and its ranks the same way.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from raydap.bridge.workers.meshes import PREFIX as MESH_PREFIX
from raydap.protocol.collectives import Entry, GroupInfo, Identity, RecordedFrame, Recorder

#: Frames of torch itself (the collective's own, its wrappers): skipped to find the call site.
_TORCH = re.compile(r"(^|/)(site|dist)-packages/torch/|(^|/)torch/(distributed|nn/parallel|cuda)/")
_PLUMBING = re.compile(r"^<|(^|/)lib/python3\.\d+/(?!site-packages/|dist-packages/)")


@dataclass(frozen=True)
class RankDump:
    """One rank's recorder of one backend, with who it is. A rank whose groups use two
    backends (``"cpu:gloo,cuda:nccl"``) is two dumps: each backend numbers its collectives."""

    worker: str
    identity: Identity
    recorder: Recorder
    backend: str = "gloo"


def positions(dump: RankDump) -> frozenset[tuple[str, str, int, int]]:
    """How far one rank got on one backend: (backend, group, last enqueued, last completed)
    for each group, and (backend, "", last op recorded, last op done) for the recorder as a
    whole. Two reads that differ mean the rank went on."""
    recorder = dump.recorder
    groups = {
        (dump.backend, name, s.last_enqueued_collective, s.last_completed_collective)
        for name, s in recorder.pg_status.items()
    }
    if recorder.progress is not None:
        groups.add((dump.backend, "", recorder.progress.last_record, recorder.progress.last_done))
    return frozenset(groups)


class Mismatch(BaseModel):
    """A rank that called something else at the group's disagreeing number."""

    rank: int
    op: str
    sizes: list[list[int]]
    dtypes: list[str]
    path: str | None = None
    line: int | None = None


class Member(BaseModel):
    """A rank of the group the verdict speaks of (one at fault, or one no worker reported):
    its place in the group, its global rank, and the worker it is."""

    rank: int
    global_rank: int
    worker: str | None
    #: The last number it reached in this sequence (-1: none), where it could be read.
    last: int | None = None


class Collective(BaseModel):
    """Where one group's ranks disagree: ``GET /api/v1/hangs``' ``collective``."""

    group: str
    group_desc: str
    world: str | None
    #: Whose sequence ``seq`` is: each backend of a group numbers its collectives from 1.
    backend: str = "gloo"
    seq: int
    #: The op the agreeing ranks called there (the most common one).
    op: str
    p2p: bool = False
    #: Ranks (of the group) that called it and wait for it to complete.
    waiting: list[int]
    #: Ranks that never arrived at ``seq``.
    missing: list[int]
    mismatch: list[Mismatch]
    #: The ranks at fault, and ranks of the group no worker reported (the first 64).
    members: list[Member]
    #: Where the agreeing ranks called it (from one of them), where known.
    path: str | None = None
    line: int | None = None
    #: The device-mesh dimension the group runs along (its description ``mesh_<dim>``),
    #: its size and its first global ranks, in group order (:mod:`raydap.bridge.workers.meshes`).
    mesh_dim: str | None = None
    group_size: int = 0
    group_ranks: list[int] = Field(default_factory=list)
    summary: str

    def at_fault(self) -> list[int]:
        """Ranks that never came or called something else, in that order."""
        return [*self.missing, *(m.rank for m in self.mismatch if m.rank not in self.missing)]

    def worker_of(self, rank: int) -> str | None:
        return next((m.worker for m in self.members if m.rank == rank), None)


def is_torch(path: str) -> bool:
    """torch's own file (its collectives, their wrappers, CUDA's Python side)."""
    return bool(_TORCH.search(path))


def call_site(frames: Sequence[RecordedFrame]) -> RecordedFrame | None:
    """The innermost frame outside torch and Python's own: where the job called the op."""
    for frame in frames:
        if not _TORCH.search(frame.filename) and not _PLUMBING.search(frame.filename):
            return frame
    return None


Signature = tuple[str, tuple[tuple[int, ...], ...], tuple[str, ...]]


@dataclass
class ReadRank:
    """One member of a group, read: its entries of one sequence, by number."""

    rank: int
    global_rank: int
    worker: str
    entries: dict[int, Entry] = field(default_factory=dict)
    signatures: dict[int, Signature] = field(default_factory=dict)
    last: int = -1
    completed: int = -1
    first: int | None = None

    def done(self, entry: Entry) -> bool:
        return entry.retired or entry.state == "completed" or entry.seq <= self.completed


def judge(dumps: Sequence[RankDump]) -> list[Collective]:
    """Every group's disagreement, the one a person should see first at the head: the group
    that holds the most waiting ranks, then one with a rank at fault, then the default
    group."""
    found = [
        verdict
        for (world, backend, _), (info, members) in sorted(_groups(dumps).items(), key=_order)
        for p2p in (False, True)
        if (verdict := _judge_group(world, backend, info, members, p2p)) is not None
    ]
    return sorted(
        found,
        key=lambda c: (-len(c.waiting), not c.at_fault(), c.p2p, c.group != "0", c.seq),
    )


#: A group's sequence space: its world, the backend, and the group's name.
GroupKey = tuple[str | None, str, str]


def _order(item: tuple[GroupKey, object]) -> tuple[str, str, str]:
    (world, backend, name), _ = item
    return world or "", name, backend


def _groups(
    dumps: Sequence[RankDump],
) -> dict[GroupKey, tuple[GroupInfo, list[tuple[int, RankDump]]]]:
    """Each group of each world and backend, as its members describe it, with those members
    (their rank in the group). Members disagreeing on a group's ranks: the most common
    account. The backends of one group are apart: a rank's gloo #3 is not its NCCL #3."""
    accounts: dict[GroupKey, Counter[GroupInfo]] = {}
    for dump in dumps:
        for info in dump.identity.groups:
            key = (dump.identity.world, dump.backend, info.name)
            accounts.setdefault(key, Counter())[info] += 1
    groups = {}
    for key, counted in accounts.items():
        info = counted.most_common(1)[0][0]
        world, backend, _ = key
        members = [
            (place, d)
            for d in dumps
            if d.identity.world == world
            and d.backend == backend
            and (place := info.index(d.identity.rank)) is not None
        ]
        groups[key] = (info, members)
    return groups


def read_group(dumps: Sequence[RankDump], collective: Collective) -> list[ReadRank]:
    """The members of ``collective``'s group that could be read, with their entries."""
    key = (collective.world, collective.backend, collective.group)
    found = _groups(dumps).get(key)
    return _read(*found, collective.p2p) if found is not None else []


def _judge_group(
    world: str | None,
    backend: str,
    info: GroupInfo,
    members: list[tuple[int, RankDump]],
    p2p: bool,
) -> Collective | None:
    read = _read(info, members, p2p)
    if not any(r.entries for r in read):
        return None
    if p2p and info.size != 2:
        # Only a pair can be matched op for op: a larger group's sends and receives go to
        # peers the recorder does not name.
        return _waiting_only(world, backend, info, read, p2p)
    top = max(r.last for r in read)
    start = max((r.first for r in read if r.first is not None), default=top)
    lowest = min(r.last for r in read)  # from lowest + 1 on, some rank never came
    for seq in range(max(start, 0), top + 1):
        present = [r for r in read if seq in r.entries]
        missing = [r.rank for r in read if r.last < seq] if seq > lowest else []
        first = present[0].signatures[seq] if present else None
        agree = not p2p and all(r.signatures[seq] == first for r in present)
        mismatch = [] if agree else _mismatches({r.rank: r.entries[seq] for r in present}, p2p)
        if missing or mismatch:
            entries = {r.rank: r.entries[seq] for r in present}
            return _verdict(world, backend, info, read, seq, entries, missing, mismatch, p2p)
    return _waiting_only(world, backend, info, read, p2p)


def _read(info: GroupInfo, members: list[tuple[int, RankDump]], p2p: bool) -> list[ReadRank]:
    """The group's members that could be read, with their entries of the sequence."""
    read = []
    for place, dump in members:
        mine = [e for e in dump.recorder.entries if e.group == info.name and e.is_p2p == p2p]
        rank = ReadRank(place, dump.identity.rank, dump.worker, {e.seq: e for e in mine})
        rank.signatures = {e.seq: _signature(e) for e in mine}
        status = dump.recorder.status(info.name, mine[0].pg_id if mine else None)
        last_seen = max(rank.entries, default=-1)
        rank.last = last_seen if p2p else max(status.last_enqueued_collective, last_seen)
        rank.completed = -1 if p2p else status.last_completed_collective
        rank.first = min(rank.entries, default=None)
        read.append(rank)
    return read


def _signature(entry: Entry) -> Signature:
    return entry.op, entry.input_sizes, entry.input_dtypes


def _mismatches(present: dict[int, Entry], p2p: bool) -> list[Mismatch]:
    if len(present) < 2:
        return []
    if p2p:  # a pair: one sends what the other receives
        (_, first), (b, second) = sorted(present.items())
        if first.op != second.op and first.input_sizes == second.input_sizes:
            return []
        return [_mismatch(b, second)]
    counted = Counter(_signature(e) for e in present.values())
    common = max(counted.items(), key=lambda item: (item[1], -_lowest(present, item[0])))[0]
    return [_mismatch(r, e) for r, e in sorted(present.items()) if _signature(e) != common]


def _lowest(present: dict[int, Entry], signature: Signature) -> int:
    return min(r for r, e in present.items() if _signature(e) == signature)


def _mismatch(rank: int, entry: Entry) -> Mismatch:
    site = call_site(entry.frames)
    return Mismatch(
        rank=rank, op=entry.op, sizes=[list(s) for s in entry.input_sizes],
        dtypes=list(entry.input_dtypes),
        path=site.filename if site else None, line=site.line if site else None,
    )  # fmt: skip


def _waiting_only(
    world: str | None, backend: str, info: GroupInfo, read: list[ReadRank], p2p: bool
) -> Collective | None:
    """Every rank came: the first number some rank still waits at, if any."""
    pending = [seq for r in read for seq, e in r.entries.items() if not r.done(e)]
    if not pending:
        return None
    seq = min(pending)
    present = {r.rank: r.entries[seq] for r in read if seq in r.entries}
    return _verdict(world, backend, info, read, seq, present, [], [], p2p)


#: Members listed beside the ranks at fault: the first ranks no worker reported, at most.
MAX_UNREPORTED = 64
#: A group's global ranks a verdict names, at most (the rest are its size).
SHOWN_RANKS = 16


def _verdict(
    world: str | None,
    backend: str,
    info: GroupInfo,
    read: list[ReadRank],
    seq: int,
    present: dict[int, Entry],
    missing: list[int],
    mismatch: list[Mismatch],
    p2p: bool,
) -> Collective:
    odd = {m.rank for m in mismatch}
    agreeing = {r: e for r, e in present.items() if r not in odd} or present
    op = Counter(e.op for e in agreeing.values()).most_common(1)[0][0]
    by_rank = {r.rank: r for r in read}
    waiting = sorted(r for r, e in present.items() if not by_rank[r].done(e))
    site = next((s for e in agreeing.values() if (s := call_site(e.frames)) is not None), None)
    blamed = [*missing, *sorted(odd)]
    members = [
        Member(rank=r, global_rank=by_rank[r].global_rank, worker=by_rank[r].worker,
               last=by_rank[r].last)
        for r in blamed
    ]  # fmt: skip
    unreported = (
        Member(rank=place, global_rank=rank, worker=None)
        for place, rank in enumerate(info.ranks())
        if place not in by_rank
    )  # fmt: skip
    members += list(itertools.islice(unreported, MAX_UNREPORTED))
    collective = Collective(
        group=info.name, group_desc=info.desc, world=world, backend=backend, seq=seq, op=op,
        p2p=p2p,
        waiting=waiting, missing=sorted(missing), mismatch=mismatch, members=members,
        path=site.filename if site else None, line=site.line if site else None,
        mesh_dim=mesh_dim(info.desc), group_size=info.size,
        group_ranks=list(itertools.islice((r for s in info.spans for r in range(*s)), SHOWN_RANKS)),
        summary="",
    )  # fmt: skip
    # A mesh group is labelled with its global ranks: the summary names ranks the same way
    names = info.ranks() if collective.mesh_dim is not None else None
    return collective.model_copy(update={"summary": summary(collective, agreeing, names)})


def summary(
    collective: Collective,
    agreeing: dict[int, Entry] | None = None,
    names: Sequence[int] | None = None,
) -> str:
    """One line: ``all_reduce #10 (default_pg): rank 2 never joined (its last: #9)``. Ranks
    are the group's, or with ``names`` (the group's global ranks, in group order) global:
    ``all_reduce #3 (the tp group [2, 3]): rank 3 never joined``."""

    def said(ranks: Iterable[int]) -> str:
        return ranks_text(names[r] for r in ranks) if names else ranks_text(ranks)

    where = f"{collective.op} #{collective.seq} ({group_label(collective)})"
    parts = []
    if collective.missing:
        lasts = {m.rank: m.last for m in collective.members}
        seen = ", ".join(_number(lasts.get(r)) for r in collective.missing)
        whose = "its" if len(collective.missing) == 1 else "their"
        parts.append(f"{said(collective.missing)} never joined ({whose} last: {seen})")
    others = said(sorted(agreeing or {})) if agreeing else "the others"
    for odd in collective.mismatch:
        at = f" at {short_path(odd.path)}:{odd.line}" if odd.path else ""
        if odd.op != collective.op:
            parts.append(f"{said([odd.rank])} called {odd.op}{at} where {others} called "
                         f"{collective.op}")  # fmt: skip
        else:
            parts.append(f"{said([odd.rank])} called {odd.op}{at} on {_tensors(odd)} where "
                         f"{others} did not")  # fmt: skip
    if not parts:
        waiting = said(collective.waiting) if collective.waiting else "no rank"
        verb = f"{waiting} wait{'s' if len(collective.waiting) == 1 else ''}"
        unread = [m.rank for m in collective.members if m.worker is None]
        if unread:  # never "none missing" while a rank of the group was not read
            them = "that rank" if len(unread) == 1 else "those ranks"
            parts.append(f"{verb}; {said(unread)} unread (no live worker is {them})")
        else:
            parts.append(f"{verb}, none missing")
    return f"{where}: " + "; ".join(parts)


def _number(seq: int | None) -> str:
    return f"#{seq}" if seq is not None and seq >= 0 else "none"


def group_label(collective: Collective) -> str:
    """The group's name (a mesh's: ``the tp group [4, 5, 6, 7]``), and its backend where it is
    not gloo (whose wording is the older)."""
    desc = collective.group_desc
    group = desc if desc and desc != "undefined" else f"group {collective.group}"
    if collective.mesh_dim is not None:
        more = ", ..." if collective.group_size > len(collective.group_ranks) else ""
        shown = ", ".join(map(str, collective.group_ranks))
        group = f"the {collective.mesh_dim} group [{shown}{more}]"
    return group if collective.backend == "gloo" else f"{group}, {collective.backend}"


def mesh_dim(desc: str) -> str | None:
    """The mesh dimension torch describes a group by (``mesh_tp``: ``tp``), or None."""
    dim = desc.removeprefix(MESH_PREFIX)
    return dim if desc.startswith(MESH_PREFIX) and dim and dim != "default" else None


def _tensors(odd: Mismatch) -> str:
    return f"sizes {odd.sizes} {'/'.join(odd.dtypes)}"


def ranks_text(ranks: Iterable[int]) -> str:
    """``rank 2``, ``ranks 0, 1, 3``, ``ranks 0-3``."""
    listed = sorted(set(ranks))
    if len(listed) == 1:
        return f"rank {listed[0]}"
    if len(listed) > 2 and listed == list(range(listed[0], listed[-1] + 1)):
        return f"ranks {listed[0]}-{listed[-1]}"
    return "ranks " + ", ".join(map(str, listed))


def short_path(path: str) -> str:
    """The file's name and its folder: what a person recognises in one line."""
    return "/".join(path.replace("\\", "/").split("/")[-2:])
