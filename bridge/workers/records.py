"""What the bridge knows of one paused worker: the record every interface shows."""

from __future__ import annotations

import enum
from typing import Literal

from pydantic import BaseModel, Field

from raydap.bridge.workers import meshes
from raydap.bridge.workers.meshes import MeshPlace
from raydap.bridge.workers.rank_sets import RankFacts
from raydap.bridge.workers.ranks import describe

Kind = Literal["breakpoint", "exception", "legacy-pdb"]


class RecordState(str, enum.Enum):
    """Where a listed worker stands, in the words every door shows. A record is ``paused``
    where its upstream says DAP's ``stopped`` (:class:`raydap.adapter.State`): the keeper
    turns the one into the other, and nothing else names a worker's state."""

    CONNECTING = "connecting"
    PAUSED = "paused"
    RUNNING = "running"
    FAILED = "failed"

    def __str__(self) -> str:
        return self.value


class Location(BaseModel):
    path: str
    line: int
    function: str


class ExceptionInfo(BaseModel):
    type: str
    message: str


#: Where a record keeps what :meth:`BreakpointRecord.rank_facts` made (a cache, not a fact).
_KEPT_FACTS = "_kept_rank_facts"


class BreakpointRecord(BaseModel):
    """A paused worker. ``id`` is stable for the worker's life, so a person can keep using it
    across that worker's successive breakpoints."""

    id: str
    kind: Kind = "breakpoint"
    state: RecordState = RecordState.CONNECTING
    job_id: str | None = None
    task_name: str | None = None
    #: The task it is paused in (None until the dashboard lists it).
    task_id: str | None = None
    actor_id: str | None = None
    actor_class: str | None = None
    node_id: str | None = None
    node_ip: str
    pid: int | None = None
    worker_id: str | None = None
    #: ``WORKER``, or ``DRIVER`` for a ``breakpoint()`` in the job's driver script.
    worker_type: str | None = None
    debugger_port: int | None = None
    paused_since: float
    location: Location | None = None
    exception: ExceptionInfo | None = None
    clients: int = 0
    error: str | None = None
    #: A ``raydap.live`` worker: held while it runs, for its whole life.
    live: bool = False
    #: Its working directory, as a live worker reports it (maps editor paths before a stop).
    working_dir: str | None = None
    #: Its rank in the job (torch.distributed, Ray Train, verl), where known: for a live
    #: worker, its rank in its default process group as torch says, once it made one.
    rank: int | None = None
    #: How many ranks its torch.distributed world has, where a live worker said so.
    world_size: int | None = None
    #: The role it plays, where the job has roles (verl: ``actor``, ``critic``, ``ref``).
    role: str | None = None
    #: Where it sits in each device mesh its job built (:mod:`.meshes`), as its live worker's
    #: process groups say: empty where it made no mesh.
    mesh: tuple[MeshPlace, ...] = ()
    #: A child process of a worker (a DataLoader worker, a multiprocessing child): the id of
    #: the worker it belongs to. Held through that worker's debugpy, for as long as it runs.
    parent: str | None = None
    #: The private debugpy and Ray hooks raydap needs that this live worker lacks, each with
    #: why (:mod:`raydap.live.compat`): what works less here. Empty: all were found.
    unsupported: list[str] = Field(default_factory=list)
    #: raydap's own requests this live worker answers (``raydapStacks``: its stacks are read
    #: in it, over its debug connection, instead of with py-spy on its node).
    answers: list[str] = Field(default_factory=list)

    @property
    def rank_text(self) -> str | None:
        """``rank 3 (critic) dp=1 tp=0``, or None where nothing of the kind is known."""
        return describe(self.rank, self.role, meshes.text(self.mesh))

    def rank_facts(self) -> RankFacts:
        """What a rank set matches of this worker. Kept with the record while its rank, role
        and mesh are the same objects (a copy with another mesh makes them anew): a command
        on ten thousand ranks matches each without building its coordinates again."""
        kept = self.__dict__.get(_KEPT_FACTS)
        if kept is not None and kept[0] is self.mesh and kept[1:3] == (self.rank, self.role):
            return kept[3]  # type: ignore[no-any-return]
        facts = meshes.facts(self.rank, self.role, self.mesh)
        # Beside the fields, not one: pydantic dumps and compares fields only (a private
        # attribute would cost a lookup through __getattr__ on every match)
        self.__dict__[_KEPT_FACTS] = (self.mesh, self.rank, self.role, facts)
        return facts

    @property
    def label(self) -> str:
        """How a person names this worker: rank, task or Actor.method, and where it runs."""
        who = f"{self.rank_text} " if self.rank_text else ""
        what = self.task_name or (f"child of {self.parent}" if self.parent else "worker")
        return f"{who}{what} (pid {self.pid} on {self.node_ip})"
