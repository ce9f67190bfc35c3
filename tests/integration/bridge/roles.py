"""A real debugpy held by the workers service, behind a DAP listener that knows a ``view`` and
a ``debug`` token: what a session of each role may see and do, without Ray."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from raydap.adapter import State, bridge_capabilities
from raydap.bridge.cluster.dashboard import WorkerRow
from raydap.bridge.cluster.discovery import PausedWorker
from raydap.bridge.server.auth import Authenticator, Token
from raydap.bridge.server.dap_listener import DapListener
from raydap.bridge.service import Workers
from raydap.bridge.workers.holder import Holder, record_id
from raydap.bridge.workers.registry import Registry
from tests.integration.conftest import DEBUGGEE, start_debuggee
from tests.waiting import until

VIEW = Token("viewer", "view", "v" * 32)
DEBUG = Token("dev", "debug", "d" * 32)


@asynccontextmanager
async def served(
    worker_id: str, script: Path = DEBUGGEE, job: str | None = None
) -> AsyncIterator[tuple[Workers, int]]:
    """``script`` held at its stop as worker ``worker_id`` (of ``job``): (the service, the
    DAP listener's port)."""
    debuggee = start_debuggee(linger=60, script=script)
    holder = Holder(Registry(), detach_grace=120)
    row = WorkerRow(worker_id=worker_id, ip="127.0.0.1", pid=debuggee.process.pid,
                    debugger_port=debuggee.port, num_paused_threads=1)  # fmt: skip
    holder.hold(PausedWorker(row, time.time()))
    workers = Workers(holder)
    auth = Authenticator([VIEW, DEBUG])

    def authorize(arguments: dict[str, Any]) -> Token:
        found = auth.check(arguments.get("token"))
        assert found is not None
        return found

    listener = DapListener(workers.attach, lambda: bridge_capabilities(None), authorize=authorize)
    _, port = await listener.start("127.0.0.1", 0)
    rid = record_id(worker_id)
    await until(lambda: rid in holder.upstreams and holder.upstreams[rid].state is State.STOPPED,
                what="the worker held at its stop")  # fmt: skip
    record = holder.registry.get(rid)
    if job is not None and record is not None:
        holder.registry.put(record.model_copy(update={"job_id": job}))  # as the State API would
    try:
        yield workers, port
    finally:
        await listener.close()
        await holder.close()
        debuggee.stop()
