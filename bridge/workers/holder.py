"""Holds paused workers: the bridge is each one's single debugpy client.

Holding keeps the worker paused with the bridge attached, so editors attach instantly and
successive breakpoints arrive on the same connection. The policy lives here: a worker resumed
with nobody watching is detached so it runs at full speed (its next ``breakpoint()`` is then
discovered afresh), a worker nobody touched for ``hold_timeout`` is resumed, and a worker that
goes away leaves the registry.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from raydap.adapter import AttachError, State, Upstream, UpstreamError, open_tcp_channel
from raydap.bridge.cluster.dashboard import DashboardError, TaskRow
from raydap.bridge.cluster.discovery import PausedWorker
from raydap.bridge.workers.records import BreakpointRecord, ExceptionInfo, Location
from raydap.bridge.workers.registry import LookupFailed, Registry

log = logging.getLogger(__name__)

#: How long an attach waits for a worker that is still being held (handshake in progress).
ATTACH_WAIT = 15.0
#: How long a worker whose hold failed is left alone before discovery may try again.
RETRY_AFTER = 5.0
#: Ray reports task events to the dashboard in batches about a second apart, so a task that
#: just paused may not be listed yet: ask again this often, for this long.
DESCRIBE_EVERY, DESCRIBE_FOR = 0.25, 10.0

#: What the task running on a worker is (the dashboard's answer), or None if not known yet.
Describe = Callable[[str], Awaitable[TaskRow | None]]


def exception_type(text: object) -> str:
    """debugpy's stopped ``text`` is the type name, sometimes with a "(note: ...)" after it."""
    name = str(text or "").split("(note:", 1)[0].strip()
    return name or "Exception"


def record_id(worker_id: str) -> str:
    """Short, stable and unique enough: 48 bits of the worker id (prefixes work too)."""
    return worker_id[:12]


class Holder:
    def __init__(
        self,
        registry: Registry,
        *,
        describe: Describe | None = None,
        handshake_timeout: float = 10.0,
        request_timeout: float = 30.0,
        hold_timeout: float | None = None,
        detach_grace: float = 1.0,
    ) -> None:
        self.registry = registry
        self._describe = describe
        self.handshake_timeout = handshake_timeout
        self.request_timeout = request_timeout
        self.hold_timeout = hold_timeout
        self.detach_grace = detach_grace
        self._idle: set[str] = set()
        self.upstreams: dict[str, Upstream] = {}
        self._holding: dict[str, asyncio.Future[Upstream]] = {}
        self._failed_at: dict[str, float] = {}
        self._touched: dict[str, float] = {}
        self._tasks: set[asyncio.Task[Any]] = set()

    # -- discovery side ---------------------------------------------------------------------

    def is_known(self, worker_id: str) -> bool:
        """Whether discovery should leave this paused worker alone (held, being held, or
        failed a moment ago)."""
        rid = record_id(worker_id)
        record = self.registry.get(rid)
        if record is not None and record.state != "failed":
            return True
        failed = self._failed_at.get(rid)
        return failed is not None and time.monotonic() - failed < RETRY_AFTER

    def still_paused(self, worker_ids: set[str]) -> None:
        """Forget failed workers that are no longer paused (discovery reports each poll)."""
        for record in self.registry.records():
            if record.state == "failed" and record.worker_id not in worker_ids:
                self.registry.remove(record.id)
                self._failed_at.pop(record.id, None)

    def hold(self, paused: PausedWorker) -> None:
        """Start holding a newly discovered worker (returns at once)."""
        worker = paused.worker
        record = BreakpointRecord(
            id=record_id(worker.worker_id),
            node_id=worker.node_id,
            node_ip=worker.ip,
            pid=worker.pid,
            worker_id=worker.worker_id,
            debugger_port=worker.debugger_port,
            paused_since=paused.seen_at,
        )
        if (self.registry.get(record.id) or record).state != "failed":
            self.registry.put(record)  # a failed one stays listed as such while retried
        self._holding[record.id] = asyncio.get_running_loop().create_future()
        self._spawn(self._hold(record))

    async def _hold(self, record: BreakpointRecord) -> None:
        assert record.debugger_port is not None
        waiter = self._holding[record.id]
        try:
            channel = await open_tcp_channel(record.node_ip, record.debugger_port)
            upstream = Upstream(
                channel,
                name=record.label,
                request_timeout=self.request_timeout,
                on_change=lambda u: self._changed(record.id, u),
            )
            try:
                await upstream.handshake(timeout=self.handshake_timeout)
            except BaseException:
                await upstream.close("handshake failed")
                raise
        except (OSError, UpstreamError, asyncio.TimeoutError) as exc:
            if isinstance(exc, asyncio.TimeoutError):
                exc = UpstreamError(
                    f"its debugpy did not finish the handshake within {self.handshake_timeout:g} s"
                    " (another debugger, or another raydap bridge, may be attached to it)"
                )
            elif isinstance(exc, ConnectionRefusedError):
                exc = UpstreamError(
                    f"its debugpy port {record.debugger_port} refuses connections: debugpy's "
                    "adapter has exited, so no debugger can attach and the worker waits "
                    "forever; restart the worker or its job"
                )
            log.warning("could not hold %s: %s", record.label, exc)
            self._failed_at[record.id] = time.monotonic()
            failed = self.registry.get(record.id) or record
            self.registry.put(failed.model_copy(update={"state": "failed", "error": str(exc)}))
            waiter.set_exception(AttachError(f"could not attach to {record.label}: {exc}"))
            waiter.exception()  # retrieved: nobody may be waiting
            return
        finally:
            self._holding.pop(record.id, None)
        self.upstreams[record.id] = upstream
        self._touched[record.id] = time.monotonic()
        log.info("holding %s (%s)", record.id, record.label)
        waiter.set_result(upstream)
        self._changed(record.id, upstream)

    # -- keeping the record current ---------------------------------------------------------

    def _changed(self, rid: str, upstream: Upstream) -> None:
        if self.upstreams.get(rid) is not upstream:
            return  # still in the handshake: _hold reports once it is done
        record = self.registry.get(rid)
        if upstream.state is State.CLOSED:
            self.upstreams.pop(rid, None)
            self._touched.pop(rid, None)
            self.registry.remove(rid)
            log.info("released %s: %s", rid, upstream.close_reason)
            return
        if record is None:
            return
        if upstream.state is State.RUNNING and not upstream.clients and rid not in self._idle:
            self._idle.add(rid)
            self._spawn(self._detach_if_idle(rid, upstream))
        state = "held" if upstream.state is State.STOPPED else "running"
        update: dict[str, Any] = {"state": state, "clients": len(upstream.clients)}
        stop = upstream.top_stop()
        if state == "held" and record.state != "held" and stop is not None:
            if record.state == "running":  # a later stop; the first keeps its discovery time
                update["paused_since"] = time.time()
            body = stop.body if isinstance(stop.body, dict) else {}
            if body.get("reason") == "exception":
                update["kind"] = "exception"
                update["exception"] = ExceptionInfo(
                    type=exception_type(body.get("text")),
                    message=str(body.get("description") or ""),
                )
            else:
                update["kind"], update["exception"] = "breakpoint", None
            update["location"] = None
            self._spawn(self._locate(rid, upstream))
            self._spawn(self._name_task(rid))
        self.registry.put(record.model_copy(update=update))

    async def _detach_if_idle(self, rid: str, upstream: Upstream) -> None:
        """Detach a worker that runs with nobody watching, so it runs at full speed.

        Not at once: a worker continued in a loop often hits its next ``breakpoint()``
        within moments, and a stop that reaches debugpy while it processes ``disconnect`` is
        resumed by it and lost. During the grace period such a stop is simply held."""
        try:
            await asyncio.sleep(self.detach_grace)
            if upstream.state is State.RUNNING and not upstream.clients:
                await upstream.detach()
        finally:
            self._idle.discard(rid)

    async def _name_task(self, rid: str) -> None:
        """Fill in job, task and actor from the dashboard once it lists the running task."""
        record = self.registry.get(rid)
        if self._describe is None or record is None or record.worker_id is None:
            return
        deadline = time.monotonic() + DESCRIBE_FOR
        task: TaskRow | None = None
        while time.monotonic() < deadline:
            try:
                task = await self._describe(record.worker_id)
            except DashboardError as exc:
                log.debug("cannot name the task of %s yet: %s", rid, exc)
            if task is not None and task.state == "RUNNING":
                break
            await asyncio.sleep(DESCRIBE_EVERY)
        record = self.registry.get(rid)
        if task is None or record is None:
            return
        name = task.name or task.func_or_class_name
        update = {
            "job_id": task.job_id,
            "task_name": name,
            "actor_id": task.actor_id,
            "actor_class": name.split(".", 1)[0] if task.actor_id and name else None,
        }
        named = record.model_copy(update=update)
        self.registry.put(named)
        if (upstream := self.upstreams.get(rid)) is not None:
            upstream.name = named.label  # clients' messages about it name the task

    async def _locate(self, rid: str, upstream: Upstream) -> None:
        """Ask the worker for its top frame, so lists can show file:line and function."""
        try:
            _, frames = await upstream.stack(levels=1)
        except UpstreamError:
            return
        record = self.registry.get(rid)
        if record is None:
            return
        top = frames[0]
        location = Location(
            path=str((top.get("source") or {}).get("path") or "<unknown>"),
            line=int(top.get("line") or 0),
            function=str(top.get("name") or "?"),
        )
        self.registry.put(record.model_copy(update={"location": location}))

    # -- client side ------------------------------------------------------------------------

    async def held_worker(self, id_or_prefix: str) -> tuple[str, Upstream]:
        """The id and connection of the held worker an id or unique prefix names (waiting
        for one still in its handshake), or AttachError saying why there is none."""
        try:
            record = self.registry.resolve(id_or_prefix)
        except LookupFailed as exc:
            raise AttachError(str(exc)) from None
        if record.kind == "legacy-pdb":
            raise AttachError(
                f"{record.id} is a legacy pdb breakpoint (RAY_DEBUG=legacy): use `ray debug`, "
                "or run the job with the default RAY_DEBUG=1 to debug it through raydap"
            )
        if record.state == "failed" and record.id not in self._holding:
            raise AttachError(f"cannot debug {record.id}: {record.error}")
        upstream = self.upstreams.get(record.id)
        if upstream is None and record.id in self._holding:
            with contextlib.suppress(asyncio.TimeoutError):
                upstream = await asyncio.wait_for(
                    asyncio.shield(self._holding[record.id]), ATTACH_WAIT
                )
        if upstream is None or upstream.state is State.CLOSED:
            raise AttachError(f"worker {record.id} is no longer paused")
        self._touched[record.id] = time.monotonic()
        return record.id, upstream

    async def resume(self, id_or_prefix: str) -> str:
        """Continue every stopped thread of one held worker; returns its id."""
        rid, upstream = await self.held_worker(id_or_prefix)
        stop = upstream.top_stop()
        if stop is None:
            raise AttachError(f"worker {rid} is already running")
        thread_id = (stop.body or {}).get("threadId", 0)
        response = await upstream.request("continue", {"threadId": thread_id})
        if not response.success:
            raise AttachError(f"worker {rid} refused to continue: {response.message}")
        return rid

    # -- upkeep -----------------------------------------------------------------------------

    async def expire(self) -> None:
        """Resume workers nobody touched for ``hold_timeout`` seconds (if set)."""
        if self.hold_timeout is None:
            return
        now = time.monotonic()
        for rid, upstream in list(self.upstreams.items()):
            idle = now - self._touched.get(rid, now)
            if (
                upstream.state is State.STOPPED
                and not upstream.clients
                and idle > self.hold_timeout
            ):
                log.info("hold timeout: resuming %s after %.0f s untouched", rid, idle)
                with contextlib.suppress(AttachError, UpstreamError):
                    await self.resume(rid)

    async def close(self) -> None:
        """Detach from every worker (they resume) and stop background work."""
        await asyncio.gather(*(u.detach() for u in list(self.upstreams.values())))
        for task in list(self._tasks):
            task.cancel()

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
