"""A worker Ray lists as paused whose debug port refuses is held again at the same stop.

debugpy's adapter (a process of its own, per worker) can exit while its worker waits in
``breakpoint()`` for a client: the worker then waits forever on a port that refuses, and the
job is stuck. The bridge reopens a listener inside the worker from outside (a pinned task on
its node injects :func:`~raydap.bridge.cluster.signal_handlers.raydap_rescue`, as pausing
from outside does) and, once Ray lists the new port, holds it as any paused worker: same
stop, same values.

Each worker is tried once per port: a rescue that fails leaves the record ``failed`` with why
and what a person can do.
"""

from __future__ import annotations

import asyncio
import logging

from raydap.bridge.cluster import on_node
from raydap.bridge.cluster.driver import DriverUnavailable, RayDriver
from raydap.bridge.workers.records import BreakpointRecord, RecordState
from raydap.bridge.workers.registry import Registry

log = logging.getLogger(__name__)

#: How long the injection may take on its node (gdb attaches, runs, detaches).
INJECT_WITHIN = 60.0


class Rescuer:
    def __init__(self, registry: Registry, driver: RayDriver) -> None:
        self._registry = registry
        self._driver = driver
        self._tried: set[tuple[str | None, int | None]] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    def rescue(self, record: BreakpointRecord) -> bool:
        """Start rescuing ``record`` (its port refused); False if it was tried at this port."""
        key = (record.worker_id, record.debugger_port)
        if key in self._tried or not record.node_id:
            return False
        self._tried.add(key)
        task = asyncio.create_task(self._rescue(record), name=f"rescue {record.id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    async def _rescue(self, record: BreakpointRecord) -> None:
        assert record.node_id
        log.warning("%s: its debug port refuses; reopening a listener inside it", record.label)
        try:
            why = await self._driver.run_on_node(
                record.node_id, on_node.rescue_in_place, record.pid, timeout=INJECT_WITHIN
            )
        except (DriverUnavailable, asyncio.TimeoutError) as exc:
            why = str(exc) or "the injection did not end in time"
        except Exception as exc:  # the task's own failure, raised here by Ray
            why = f"{type(exc).__name__}: {exc}"
        current = self._registry.get(record.id)
        if current is None or current.state != RecordState.FAILED:
            return  # it left, or was held meanwhile
        if why:
            log.warning("%s: the rescue failed: %s", record.label, why)
            error = (
                f"its debugpy port {record.debugger_port} refuses connections (debugpy's adapter "
                f"exited) and reopening a listener inside it failed: {why}; restart the worker "
                "or its job"
            )
            self._registry.put(current.model_copy(update={"error": error}))
            return
        # Discovery holds it again at its next try, once Ray lists the new port.
        log.info("%s: a new listener is opening inside it", record.label)
        self._registry.put(current.model_copy(update={"error": "rescued: holding it again"}))

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
