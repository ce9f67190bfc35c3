"""What the bridge knows of one paused worker: the record every interface shows."""

from __future__ import annotations

import enum
from typing import Literal

from pydantic import BaseModel, Field

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
        """``rank 3 (critic)``, or None where neither is known."""
        return describe(self.rank, self.role)

    @property
    def label(self) -> str:
        """How a person names this worker: rank, task or Actor.method, and where it runs."""
        who = f"{self.rank_text} " if self.rank_text else ""
        what = self.task_name or (f"child of {self.parent}" if self.parent else "worker")
        return f"{who}{what} (pid {self.pid} on {self.node_ip})"
