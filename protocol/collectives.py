"""What a live worker says of its torch.distributed: who it is, and its Flight Recorder (sans-I/O).

A worker answers the bridge's ``raydapCollectives`` request (:mod:`raydap.live.collectives`)
with its identity (rank, world, process groups) and the tail of each of torch's Flight
Recorders (the generic one, gloo's, and NCCL's own), in torch's own field names, so gloo's and
NCCL's dumps read alike; but they are kept apart, by backend. All of it is outside input:
checked against these models, with every list and string bounded; anything else is a reason
why that rank could not be read, never an error that stops the verdict.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeInt,
    PositiveInt,
    ValidationError,
    field_validator,
    model_validator,
)

MAX_REPLY_BYTES = 2 * 1024 * 1024
MAX_ENTRIES = 512
MAX_GROUPS = 256
MAX_RANKS = 100_000
MAX_SPANS = 4096
MAX_TENSORS = 1024
MAX_MESHES = 16
MAX_MESH_DIMS = 16
Text = Annotated[str, Field(max_length=4096)]
#: One tensor's shape.
Sizes = Annotated[tuple[int, ...], Field(max_length=16)]
Name = Annotated[str, Field(max_length=256)]


#: A run of global ranks: ``range(start, stop, step)``.
Span = tuple[NonNegativeInt, NonNegativeInt, PositiveInt]


class GroupInfo(BaseModel):
    """A process group as its member reports it: its global ranks in group order (a rank's
    place in that order is its rank in the group), as runs (:func:`raydap.live.collectives.
    spans`): a world's every rank in one run, not ten thousand numbers from each rank."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    name: Name
    desc: Name = ""
    spans: tuple[Span, ...] = Field(max_length=MAX_SPANS)

    @model_validator(mode="after")
    def _bounded(self) -> GroupInfo:
        if any(stop <= start for start, stop, _ in self.spans):
            raise ValueError("a run of ranks ends before it starts")
        if self.size > MAX_RANKS:
            raise ValueError(f"a group of over {MAX_RANKS} ranks")
        return self

    @property
    def size(self) -> int:
        return sum(len(range(*span)) for span in self.spans)

    def index(self, rank: int) -> int | None:
        """The rank's place in the group (its group rank), or None: not a member."""
        offset = 0
        for start, stop, step in self.spans:
            if start <= rank < stop and (rank - start) % step == 0:
                return offset + (rank - start) // step
            offset += len(range(start, stop, step))
        return None

    def ranks(self) -> list[int]:
        """Its global ranks, in group order."""
        return [rank for span in self.spans for rank in range(*span)]


class TorchMesh(BaseModel):
    """A device mesh as torch tells it to the rank (``init_device_mesh``'s): its dimensions'
    names, its shape, and the rank's coordinate in it."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    dims: tuple[Name, ...] = Field(max_length=MAX_MESH_DIMS)
    shape: tuple[PositiveInt, ...] = Field(max_length=MAX_MESH_DIMS)
    coord: tuple[NonNegativeInt, ...] = Field(max_length=MAX_MESH_DIMS)

    @model_validator(mode="after")
    def _consistent(self) -> TorchMesh:
        if not len(self.dims) == len(self.shape) == len(self.coord):
            raise ValueError("a mesh's names, shape and coordinate differ in length")
        if any(c >= n for c, n in zip(self.coord, self.shape, strict=True)):
            raise ValueError("a coordinate outside its mesh")
        return self


class Identity(BaseModel):
    """Which rank a worker is: torch.distributed's own answer, whatever its environment."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    rank: int = Field(ge=0, lt=MAX_RANKS)
    world_size: int = Field(ge=1, le=MAX_RANKS)
    backend: Name = ""
    #: The store its ranks met at: tells one world of a job from another.
    world: Text | None = None
    groups: tuple[GroupInfo, ...] = Field(default=(), max_length=MAX_GROUPS)
    #: The device meshes the job built, as torch says them (none from a worker whose torch
    #: does not: its mesh groups still say most of it).
    meshes: tuple[TorchMesh, ...] = Field(default=(), max_length=MAX_MESHES)

    def group(self, name: str) -> GroupInfo | None:
        return next((g for g in self.groups if g.name == name), None)


class RecordedFrame(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    name: Text
    filename: Text
    line: int = 0


class Entry(BaseModel):
    """One collective or point-to-point op in a rank's recorder (torch's fields)."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    record_id: int
    pg_id: int | None = None
    #: (group name, group description)
    process_group: tuple[Name, Name]
    collective_seq_id: int = 0
    p2p_seq_id: int = 0
    op_id: int | None = None
    profiling_name: Name
    time_created_ns: int | None = None
    # Tuples, not lists: thousands of ranks' entries stay out of the garbage collector's way
    # (a tuple of numbers is untracked), which was most of the time a large verdict took.
    input_sizes: tuple[Sizes, ...] = Field(default=(), max_length=MAX_TENSORS)
    input_dtypes: tuple[Name, ...] = Field(default=(), max_length=MAX_TENSORS)
    output_sizes: tuple[Sizes, ...] = Field(default=(), max_length=MAX_TENSORS)
    output_dtypes: tuple[Name, ...] = Field(default=(), max_length=MAX_TENSORS)
    #: ``scheduled``, ``started`` or ``completed`` (NCCL); gloo leaves it ``scheduled``.
    state: Name = "scheduled"
    time_discovered_started_ns: int | None = None
    time_discovered_completed_ns: int | None = None
    #: True once the op is done and its work object let go (gloo says it this way).
    retired: bool = False
    timeout_ms: int | None = None
    is_p2p: bool = False
    frames: tuple[RecordedFrame, ...] = Field(default=(), max_length=64)

    @property
    def group(self) -> str:
        return self.process_group[0]

    @property
    def op(self) -> str:
        """``all_reduce`` of ``gloo:all_reduce``; ``send`` of ``nccl:send 0->1``."""
        return self.profiling_name.split(":", 1)[-1].split(" ", 1)[0] or self.profiling_name

    @property
    def seq(self) -> int:
        """Its place in its group's sequence: collectives and point-to-point ops count
        apart."""
        return self.p2p_seq_id if self.is_p2p else self.collective_seq_id


class GroupStatus(BaseModel):
    """torch's ``pg_status``: how far a group got on this rank (-1: none yet)."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    last_enqueued_collective: int = -1
    last_started_collective: int = -1
    last_completed_collective: int = -1


class Progress(BaseModel):
    """How far a recorder got as a whole, by record id (every op has one, point-to-point ones
    too): its last op recorded, and its last one done (completed or retired). These count on
    where ``pg_status`` does not: NCCL's last completed lags, and reads -1 right after three
    completed collectives."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    last_record: int = -1
    last_done: int = -1


class Recorder(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    version: Name = ""
    pg_status: dict[Name, GroupStatus] = Field(default_factory=dict, max_length=MAX_GROUPS)
    entries: list[Entry] = Field(default_factory=list, max_length=MAX_ENTRIES)
    #: In a status read (no entries), how far its ops got.
    progress: Progress | None = None

    @field_validator("pg_status", mode="before")
    @classmethod
    def _statuses(cls, value: Any) -> Any:
        return value if isinstance(value, dict) else {}

    def status(self, group: str, pg_id: int | None = None) -> GroupStatus:
        found = self.pg_status.get(group)
        if found is None and pg_id is not None:
            found = self.pg_status.get(str(pg_id))
        return found or GroupStatus()


#: A backend's name, as a worker keys its recorders (``gloo``: torch's generic recorder).
Backend = Annotated[str, Field(pattern=r"^[a-z0-9_]{1,32}$")]
#: Recorders one worker may send: torch has two (generic and NCCL's).
MAX_BACKENDS = 4


class Reply(BaseModel):
    """A worker's answer to ``raydapCollectives``."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    identity: Identity | None = None
    #: The Ray job the worker makes its groups for.
    job: Annotated[str, Field(pattern=r"^[0-9a-fA-F]{1,64}$")] | None = None
    #: The generic recorder alone (what a worker of before ``recorders`` sends).
    recorder: Recorder | None = None
    #: Each backend's recorder: never merged, each numbers its collectives from 1.
    recorders: dict[Backend, Recorder] | None = Field(None, max_length=MAX_BACKENDS)
    #: Why there is no recorder (no torch, an old torch, the recorder off).
    reason: Text | None = None

    def by_backend(self) -> dict[str, Recorder]:
        """Every recorder the worker sent, by backend (an older worker's one is ``gloo``)."""
        if self.recorders is not None:
            return dict(self.recorders)
        return {"gloo": self.recorder} if self.recorder is not None else {}


def read_reply(body: Any, size: int) -> Reply | str:
    """A worker's answer, or why it cannot be used. ``size``: its length on the wire."""
    if size > MAX_REPLY_BYTES:
        return f"its recorder is over the size cap ({size} bytes > {MAX_REPLY_BYTES})"
    try:
        return Reply.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return f"malformed recorder data ({where}: {first['msg']})"


def read_identity(body: Any) -> Reply | None:
    """A ``raydapProcessGroups`` event's body (identity and job), or None if it is not one."""
    try:
        reply = Reply.model_validate(body)
    except ValidationError:
        return None
    return reply if reply.identity is not None else None
