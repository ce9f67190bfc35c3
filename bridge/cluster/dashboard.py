"""The Ray dashboard's State API, as discovery needs it.

Everything the dashboard answers is outside input: responses are size-capped, time-limited and
validated, and any failure becomes one :class:`DashboardError` whose message says what went
wrong, so discovery can report it on ``/healthz`` and back off.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
from pydantic import BaseModel, ConfigDict, ValidationError

MAX_RESPONSE_BYTES = 32 * 1024 * 1024
_PAUSED = {"filter_keys": "num_paused_threads", "filter_predicates": "!=", "filter_values": "0"}
_LISTENING = {"filter_keys": "debugger_port", "filter_predicates": "!=", "filter_values": "0"}


class DashboardError(Exception):
    """The dashboard could not be asked, or answered something unusable."""


class ProfilingDisabled(DashboardError):
    """The dashboard's py-spy endpoints are off (Ray's default)."""


class WorkerRow(BaseModel):
    """One row of ``/api/v0/workers``; only what the bridge uses."""

    model_config = ConfigDict(extra="ignore")

    worker_id: str
    ip: str
    pid: int | None = None
    node_id: str | None = None
    debugger_port: int | None = None
    num_paused_threads: int | None = 0
    is_alive: bool = True
    #: ``WORKER`` or ``DRIVER`` (a ``breakpoint()`` in the job's driver script).
    worker_type: str | None = None


class WorkerExit(BaseModel):
    """How a worker ended, as Ray's ``/api/v0/workers`` says (``detail``)."""

    model_config = ConfigDict(extra="ignore")

    is_alive: bool = True
    #: ``SYSTEM_ERROR``, ``NODE_OUT_OF_MEMORY``, ``INTENDED_USER_EXIT``...
    exit_type: str | None = None
    #: Ray's words (a signal, the OOM killer, a lost connection).
    exit_detail: str | None = None
    node_id: str | None = None


class NodeRow(BaseModel):
    """One row of ``/api/v0/nodes``."""

    model_config = ConfigDict(extra="ignore")

    node_id: str
    node_ip: str | None = None
    #: ``ALIVE`` or ``DEAD``.
    state: str | None = None
    state_message: str | None = None


class TaskRow(BaseModel):
    """One row of ``/api/v0/tasks``."""

    model_config = ConfigDict(extra="ignore")

    task_id: str | None = None
    attempt_number: int = 0
    name: str | None = None
    func_or_class_name: str | None = None
    state: str | None = None
    job_id: str | None = None
    actor_id: str | None = None
    worker_id: str | None = None
    node_id: str | None = None
    worker_pid: int | None = None
    #: ``NORMAL_TASK``, ``ACTOR_TASK``, ``ACTOR_CREATION_TASK``, ``DRIVER_TASK``.
    type: str | None = None


class ActorRow(BaseModel):
    """One row of ``/api/v0/actors``."""

    model_config = ConfigDict(extra="ignore")

    actor_id: str
    class_name: str = ""
    name: str = ""
    job_id: str | None = None
    node_id: str | None = None
    pid: int | None = None
    state: str | None = None


class DashboardClient:
    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = 5.0,
        limit: int = 10_000,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._headers = headers or {}
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._limit = limit
        self._session: aiohttp.ClientSession | None = None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    async def paused_workers(self) -> list[WorkerRow]:
        """Live workers blocked in a debugger, with their debugpy port known."""
        rows = await self._state_rows("/api/v0/workers", {**_PAUSED, "limit": str(self._limit)})
        workers = [_validate(WorkerRow, row) for row in rows]
        return [w for w in workers if w.is_alive and w.debugger_port and w.num_paused_threads]

    async def running_listeners(self) -> list[WorkerRow]:
        """Live workers with a debugpy port open that are not paused in it (``raydap.live``
        workers, and workers that paused once and run on)."""
        query = {**_LISTENING, "limit": str(self._limit)}
        workers = [_validate(WorkerRow, row) for row in await self._state_rows(
            "/api/v0/workers", query)]  # fmt: skip
        return [w for w in workers if w.is_alive and w.debugger_port and not w.num_paused_threads]

    async def running_task(self, worker_id: str) -> TaskRow | None:
        """The task a worker is running now (to name it by task or ``Actor.method``)."""
        where = {"filter_keys": "worker_id", "filter_predicates": "=", "filter_values": worker_id}
        rows = await self._state_rows("/api/v0/tasks", {**where, "limit": "100"})
        tasks: list[TaskRow] = [_validate(TaskRow, row) for row in rows]
        running = [t for t in tasks if t.state == "RUNNING"]
        return (running or tasks)[-1] if tasks else None

    async def actor_in(self, pid: int, node_id: str | None) -> ActorRow | None:
        """The live actor whose process is ``pid`` on that node (Serve replicas and Train
        workers run their code outside any task the dashboard lists as running)."""
        where = {"filter_keys": "pid", "filter_predicates": "=", "filter_values": str(pid)}
        rows = await self._state_rows("/api/v0/actors", {**where, "limit": "100"})
        actors: list[ActorRow] = [_validate(ActorRow, row) for row in rows]
        return next((a for a in actors if node_id in (None, a.node_id)), None)

    async def alive_actors(self, class_name: str) -> list[ActorRow]:
        """Every live actor of one class (verl's ``WorkerDict`` ranks, named by rank)."""
        where = {"filter_keys": "class_name", "filter_predicates": "=", "filter_values": class_name}
        rows = await self._state_rows("/api/v0/actors", {**where, "limit": str(self._limit)})
        actors: list[ActorRow] = [_validate(ActorRow, row) for row in rows]
        return [a for a in actors if a.state in (None, "ALIVE")]

    async def task_state(self, task_id: str) -> str | None:
        """The state of a task's latest attempt (``RUNNING``, ``FINISHED``, ``FAILED`` ...),
        or None while the dashboard does not list it."""
        where = {"filter_keys": "task_id", "filter_predicates": "=", "filter_values": task_id}
        rows = await self._state_rows("/api/v0/tasks", {**where, "limit": "100"})
        tasks: list[TaskRow] = [_validate(TaskRow, row) for row in rows]
        latest = max(tasks, key=lambda t: t.attempt_number, default=None)
        return latest.state if latest else None

    async def job_status(self, job_id: str) -> str | None:
        """A job's status (``RUNNING``, ``SUCCEEDED``, ``FAILED``, ``STOPPED`` ...), drivers
        started by hand included, or None while the dashboard does not list it."""
        where = {"filter_keys": "job_id", "filter_predicates": "=", "filter_values": job_id}
        rows = await self._state_rows("/api/v0/jobs", {**where, "limit": "10"})
        statuses = [row.get("status") for row in rows if isinstance(row, dict)]
        return next((str(s) for s in statuses if s), None)

    async def running_tasks(self) -> list[tuple[TaskRow, WorkerRow]]:
        """Every task running now with the worker that runs it (drivers left out)."""
        where = {"filter_keys": "state", "filter_predicates": "=", "filter_values": "RUNNING"}
        alive = {"filter_keys": "is_alive", "filter_predicates": "=", "filter_values": "true"}
        task_rows, worker_rows = await asyncio.gather(
            self._state_rows("/api/v0/tasks", {**where, "limit": str(self._limit)}),
            self._state_rows("/api/v0/workers", {**alive, "limit": str(self._limit)}),
        )
        workers = {w.worker_id: w for w in (_validate(WorkerRow, row) for row in worker_rows)}
        running: dict[str, tuple[TaskRow, WorkerRow]] = {}
        for task in (_validate(TaskRow, row) for row in task_rows):
            worker = workers.get(task.worker_id or "")
            if worker is not None and worker.pid and task.type != "DRIVER_TASK":
                running[worker.worker_id] = (task, worker)
        return list(running.values())

    async def traceback(self, pid: int, node_id: str) -> str:
        """py-spy's text dump of a worker through the dashboard (``/worker/traceback``), where
        the head runs with ``RAY_DASHBOARD_ENABLE_PROFILING=1``."""
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=self._timeout, headers=self._headers)
        query = {"pid": str(pid), "node_id": node_id}
        try:
            async with self._session.get(
                self.base_url + "/worker/traceback", params=query
            ) as answer:
                body = await answer.content.read(MAX_RESPONSE_BYTES + 1)
                text = body.decode(errors="replace")
                if answer.status == 403:
                    raise ProfilingDisabled(text.strip()[:200] or "profiling is disabled")
                if answer.status != 200:
                    raise DashboardError(
                        f"dashboard traceback: HTTP {answer.status}: {text.strip()[:300]}"
                    )
                if len(body) > MAX_RESPONSE_BYTES:
                    raise DashboardError(f"dashboard traceback over {MAX_RESPONSE_BYTES} bytes")
                return text
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
            raise DashboardError(f"dashboard traceback: {exc or type(exc).__name__}") from None

    async def worker_exit(self, worker_id: str) -> WorkerExit | None:
        """How a worker ended (or that it lives on), None while the dashboard does not list it."""
        where = {"filter_keys": "worker_id", "filter_predicates": "=", "filter_values": worker_id}
        rows = await self._state_rows("/api/v0/workers", {**where, "limit": "10"})
        return _validate(WorkerExit, rows[0]) if rows else None

    async def node(self, node_id: str) -> NodeRow | None:
        """A node's state (``DEAD``: Ray lost it, and why), None while it is not listed."""
        where = {"filter_keys": "node_id", "filter_predicates": "=", "filter_values": node_id}
        rows = await self._state_rows("/api/v0/nodes", {**where, "limit": "10"})
        return _validate(NodeRow, rows[0]) if rows else None

    async def node_ip(self, node_id: str) -> str | None:
        """The address a node registered with Ray, or None while the dashboard does not list it."""
        where = {"filter_keys": "node_id", "filter_predicates": "=", "filter_values": node_id}
        rows = await self._state_rows("/api/v0/nodes", {**where, "limit": "10"})
        found = [row.get("node_ip") for row in rows if isinstance(row, dict)]
        return next((str(ip) for ip in found if isinstance(ip, str) and ip), None)

    async def _state_rows(self, path: str, query: dict[str, str]) -> list[Any]:
        data = await self._get_json(path, {"detail": "1", **query})
        try:
            rows = data["data"]["result"]["result"]
        except (KeyError, TypeError):
            raise DashboardError(f"unexpected answer from {path}") from None
        if not isinstance(rows, list):
            raise DashboardError(f"unexpected answer from {path}: not a list")
        return rows

    async def _get_json(self, path: str, query: dict[str, str]) -> Any:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=self._timeout, headers=self._headers)
        url = self.base_url + path
        try:
            async with self._session.get(url, params=query) as response:
                if response.status in (401, 403):
                    raise DashboardError(_refused(response.status, bool(self._headers)))
                if response.status != 200:
                    raise DashboardError(f"dashboard answered HTTP {response.status} for {url}")
                body = bytearray()
                async for chunk in response.content.iter_chunked(1 << 16):
                    body += chunk
                    if len(body) > MAX_RESPONSE_BYTES:
                        raise DashboardError(f"dashboard answer over {MAX_RESPONSE_BYTES} bytes")
                return _json(bytes(body))
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
            why = str(exc) or type(exc).__name__
            raise DashboardError(f"dashboard at {self.base_url} unreachable: {why}") from None


def _refused(status: int, sent_token: bool) -> str:
    if not sent_token:
        return (
            f"the dashboard answered HTTP {status}: this cluster uses Ray's token auth "
            "(RAY_AUTH_MODE=token) and raydap found no Ray token; give `raydap serve` "
            "RAY_AUTH_TOKEN or RAY_AUTH_TOKEN_PATH, or put it in ~/.ray/auth_token"
        )
    return (
        f"the dashboard answered HTTP {status}: it refused the Ray token raydap sent "
        "(RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token): it is not this cluster's"
    )


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError as exc:
        raise DashboardError(f"dashboard answer is not JSON: {exc}") from None


def _validate(model: type[BaseModel], row: Any) -> Any:
    try:
        return model.model_validate(row)
    except ValidationError as exc:
        raise DashboardError(f"unexpected {model.__name__} from the dashboard: {exc}") from None
