"""What to call a paused worker, from what Ray reports about it.

Most workers run a task or actor method the dashboard lists as ``RUNNING``: they are named by
it (``train_step``, ``Counter.step``). Some run their code outside any listed task: a Ray Train
worker runs the training function in a thread of its own after ``run_train_fn`` returned, and a
Serve replica handles requests without task events. They are named by their actor (Train: the
paused function and the worker's rank; Serve: application, deployment and replica). A
``breakpoint()`` in the job's driver script is ``driver``.
"""

from __future__ import annotations

import ast
import contextlib
from typing import Any, Protocol

from raydap.adapter import State, Upstream, UpstreamError
from raydap.adapter.upstream import in_worker
from raydap.bridge.cluster.dashboard import ActorRow, TaskRow
from raydap.bridge.workers import ranks
from raydap.bridge.workers.records import BreakpointRecord

SERVE_PREFIX = "ServeReplica:"
#: How deep a paused actor's stack is searched for the method its task names.
MAX_STACK = 200
TRAIN_WORKER = "RayTrainWorker"


class RayState(Protocol):
    """The dashboard's answers naming needs."""

    async def running_task(self, worker_id: str) -> TaskRow | None: ...

    async def actor_in(self, pid: int, node_id: str | None) -> ActorRow | None: ...


class Namer:
    """Names workers. Which actor a process hosts is asked until found, then remembered (an
    actor's process hosts only it), since a thousand ranks pausing together already cost the
    dashboard one task query each poll; a process with no actor yet may be given one later."""

    #: Processes whose actor is remembered, at most (then it starts afresh).
    MAX_REMEMBERED = 10_000

    def __init__(self, ray: RayState) -> None:
        self.ray = ray
        self._actors: dict[str, ActorRow] = {}

    async def describe(
        self, record: BreakpointRecord, upstream: Upstream, *, last_try: bool = False
    ) -> dict[str, Any] | None:
        """The record's naming fields, or None while Ray has not reported enough (ask
        again). On the last try, a worker with no running task is named by its last task."""
        if record.worker_type == "DRIVER" and record.worker_id:
            return {"task_name": "driver", "job_id": record.worker_id[:8]}
        if record.parent is not None:
            return await _child_names(upstream)
        names = await self._names(record, upstream, last_try)
        if names is None:
            return None
        return {**names, **await self._identity(record, names, upstream)}

    async def _names(
        self, record: BreakpointRecord, upstream: Upstream, last_try: bool
    ) -> dict[str, Any] | None:
        if record.worker_id is None:
            return None
        task = await self.ray.running_task(record.worker_id)
        if task is not None and task.state == "RUNNING":
            if last_try or await _runs_method(upstream, task):
                return from_task(task)
            return None  # the actor's previous method, not yet reported finished: ask again
        actor = await self._actor(record)
        if actor is not None and actor.class_name.startswith(SERVE_PREFIX):
            return _serve_replica(actor)
        if actor is not None and actor.class_name == TRAIN_WORKER:
            return await _train_worker(actor, upstream)
        return from_task(task) if last_try and task is not None else None

    async def _identity(
        self, record: BreakpointRecord, names: dict[str, Any], upstream: Upstream
    ) -> dict[str, Any]:
        """``rank`` (:mod:`.ranks`), where not known yet: a process keeps its rank, so one
        found before is kept (the role follows the method running: :func:`from_task`)."""
        if names.get("rank") is not None or record.rank is not None:
            return {}
        actor_class = str(names.get("actor_class") or "")
        if actor_class.endswith(ranks.VERL_CLASS_SUFFIX):
            actor = await self._actor(record)
            if (rank := ranks.rank_from_actor_name(actor.name if actor else None)) is not None:
                return {"rank": rank}
        if upstream.state is State.STOPPED:
            return {"rank": await _probe_rank(upstream)}
        return {}

    async def _actor(self, record: BreakpointRecord) -> ActorRow | None:
        if record.pid is None:
            return None
        key = record.worker_id or ""  # unique per process, unlike a pid
        actor = self._actors.get(key)
        if actor is None:
            actor = await self.ray.actor_in(record.pid, record.node_id)
            if actor is not None:
                if len(self._actors) >= self.MAX_REMEMBERED:
                    self._actors.clear()
                self._actors[key] = actor
        return actor


def from_task(task: TaskRow) -> dict[str, Any]:
    """The naming fields of a worker running ``task`` (a verl method's role included)."""
    name = task.name or task.func_or_class_name
    return {
        "task_id": task.task_id,
        "job_id": task.job_id,
        "task_name": name,
        "actor_id": task.actor_id,
        "actor_class": name.split(".", 1)[0] if task.actor_id and name else None,
        "role": ranks.role_from_task(name),
    }


def _serve_replica(actor: ActorRow) -> dict[str, Any]:
    """``ServeReplica:app:Deployment`` named ``SERVE_REPLICA::app#Deployment#replica``."""
    app_deployment = actor.class_name.removeprefix(SERVE_PREFIX).replace(":", "/")
    replica = actor.name.rsplit("#", 1)[-1] if "#" in actor.name else actor.actor_id[:8]
    return {
        "task_name": f"serve {app_deployment} replica {replica}",
        "job_id": actor.job_id,
        "actor_id": actor.actor_id,
        "actor_class": actor.class_name,
    }


async def _train_worker(actor: ActorRow, upstream: Upstream) -> dict[str, Any]:
    """``train_func rank 1``: the paused function and the worker's world rank (asked of the
    worker itself, read-only)."""
    function, rank = "train", None
    with contextlib.suppress(UpstreamError, IndexError, ValueError, SyntaxError):
        _, frames = await upstream.stack(levels=1)
        function = str(frames[0].get("name") or function)
        answer = await upstream.request(
            "evaluate",
            {"expression": in_worker.TRAIN_RANK, "frameId": frames[0]["id"], "context": "watch"},
        )
        if answer.success:
            rank = int(ast.literal_eval(str((answer.body or {}).get("result"))))
    return {
        "task_name": f"{function} rank {'?' if rank is None else rank}",
        "job_id": actor.job_id,
        "actor_id": actor.actor_id,
        "actor_class": TRAIN_WORKER,
        "rank": rank,
    }


async def _child_names(upstream: Upstream) -> dict[str, Any]:
    """A paused child process named by itself (its job and node are its parent's)."""
    with contextlib.suppress(UpstreamError, IndexError, KeyError, ValueError, SyntaxError):
        _, frames = await upstream.stack(levels=1)
        answer = await upstream.request(
            "evaluate",
            {"expression": in_worker.CHILD_NAME, "frameId": frames[0]["id"], "context": "watch"},
        )
        name = ast.literal_eval(str((answer.body or {}).get("result"))) if answer.success else ""
        if isinstance(name, str) and name.strip():
            return {"task_name": name.strip()[:200]}
    return {}


async def _runs_method(upstream: Upstream, task: TaskRow) -> bool:
    """Whether a paused actor's stack is in the method its task names. Ray reports a task's
    end about a second late, so an actor that stops in its next method right after one ended
    is still listed as running the one before (``actor_update_policy`` for a stop in
    ``critic_compute_values``). Tasks that are not actor methods, and workers that are not
    paused, are taken as reported."""
    name = task.name or task.func_or_class_name or ""
    if not task.actor_id or "." not in name or upstream.state is not State.STOPPED:
        return True
    method = name.rsplit(".", 1)[1]
    try:
        _, frames = await upstream.stack(levels=MAX_STACK)
    except UpstreamError:
        return True
    return any(str(f.get("name") or "").split(".")[-1] == method for f in frames)


async def _probe_rank(upstream: Upstream) -> int | None:
    """The rank a paused worker's torch.distributed (or ``RANK``) says, read-only."""
    with contextlib.suppress(UpstreamError, IndexError, KeyError):
        _, frames = await upstream.stack(levels=1)
        answer = await upstream.request(
            "evaluate",
            {"expression": in_worker.RANK, "frameId": frames[0]["id"], "context": "watch"},
        )
        if answer.success:
            return ranks.rank_from_probe(str((answer.body or {}).get("result")))
    return None
