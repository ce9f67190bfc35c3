"""The workers a session shows: each as the session sees it, and the feeds that hand them to
it (one worker, or every next one of a job). Shared by the mux and the session's breakpoints,
which both act on them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from raydap.adapter.upstream.connection import Upstream


@dataclass(eq=False)
class Worker:
    """A held worker as a session sees it: ``key`` is its breakpoint id."""

    key: str
    upstream: Upstream
    #: Held while it runs (``raydap.live``): it joins running, and what the session set in
    #: it is taken out again when the client disconnects.
    live: bool = False
    #: Its working directory if known before it stops (its Ray package, for path mapping).
    working_dir: str | None = None
    #: What it runs and where, as far as the bridge knows.
    task: str | None = None
    pid: int | None = None
    node: str | None = None
    #: Its rank in the job and its role, where known (``rank 3``, ``critic``).
    rank: int | None = None
    role: str | None = None
    #: A child process of a worker: that worker's key.
    parent: str | None = None

    @property
    def label(self) -> str:
        return self.upstream.name

    def facts(self) -> dict[str, Any]:
        """The worker as fields, for clients that act on them (a thread's ``worker``) rather
        than parse display names."""
        facts = {"key": self.key, "label": self.label, "task": self.task, "pid": self.pid,
                 "node": self.node, "rank": self.rank, "role": self.role,
                 "parent": self.parent}  # fmt: skip
        return {name: value for name, value in facts.items() if value is not None}


class WorkerFeed(Protocol):
    """The workers a session shows, as they become available."""

    #: True for a follow session, which outlives its workers; False for a single worker.
    follows: bool

    def start(self, join: Callable[[Worker], None], end: Callable[[str], None]) -> None:
        """Hand workers to ``join`` as they come; ``end(why)`` once no more can come."""
        ...

    def stop(self) -> None: ...


class SingleWorker:
    """The feed of a session attached to one worker."""

    follows = False

    def __init__(self, worker: Worker) -> None:
        self.worker = worker

    def start(self, join: Callable[[Worker], None], end: Callable[[str], None]) -> None:
        join(self.worker)  # it ends when its worker leaves

    def stop(self) -> None:
        pass
