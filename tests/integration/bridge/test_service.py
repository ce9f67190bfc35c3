"""The workers service on a real held debugpy: what the HTTP API and the MCP tools both call
reads a paused worker's frames, values and source, steps and continues it, and says what kind
of failure a request met (a running worker is ``not_paused``, an unknown one ``not_found``)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest

from raydap.adapter import State
from raydap.adapter.errors import Kind, WorkerError
from raydap.bridge.cluster.dashboard import WorkerRow
from raydap.bridge.cluster.discovery import PausedWorker
from raydap.bridge.service import Workers
from raydap.bridge.workers.holder import Holder, record_id
from raydap.bridge.workers.registry import Registry
from tests.integration.conftest import DEBUGGEE, start_debuggee
from tests.waiting import until

WORKER_ID = "ef" * 28


@pytest.fixture
async def workers() -> AsyncIterator[Workers]:
    debuggee = start_debuggee(linger=60)  # lives on, running, after its two stops
    holder = Holder(Registry(), detach_grace=120)
    row = WorkerRow(worker_id=WORKER_ID, ip="127.0.0.1", pid=debuggee.process.pid,
                    debugger_port=debuggee.port, num_paused_threads=1)  # fmt: skip
    holder.hold(PausedWorker(row, time.time()))
    yield Workers(holder)
    await holder.close()
    debuggee.stop()


async def test_a_paused_worker_read_stepped_and_continued_through_the_service(
    workers: Workers,
) -> None:
    rid = record_id(WORKER_ID)
    await until(lambda: workers.holder.registry.get(rid), what="the worker listed")
    record, _ = await workers.paused(rid[:6])  # a prefix names it, as at every door
    assert record.id == rid and [r.id for r in workers.held()] == [rid]

    standing = await workers.standing(rid)
    assert standing is not None and standing[0] is not None and standing[0]["name"] == "work"
    assert standing[1] == "breakpoint"
    _, frame, variables = await workers.variables(rid, 0)
    assert frame["name"] == "work"
    assert {v["name"]: v["value"] for v in variables if v["name"] in ("n", "total")} == {
        "n": "20", "total": "40"}  # fmt: skip
    _, source = await workers.source(rid, 0, context_lines=1)
    assert source.frame["source"]["path"] == str(DEBUGGEE)
    assert "debugpy.breakpoint()" in source.code and source.first == frame["line"] - 1
    assert await workers.evaluate("total * 10", worker=rid) == [{"id": rid, "result": "400"}]

    _, after = await workers.step(rid, "over", timeout=30)
    assert after is not None and after.state == "paused"
    _, stepped = await workers.frame(rid, 0)
    assert stepped["line"] == frame["line"] + 1

    assert await workers.continue_workers(rid) == [rid]
    upstream = workers.holder.upstreams[rid]
    await until(lambda: upstream.state is State.STOPPED, what="the second stop")
    assert await workers.continue_workers(rid) == [rid]
    await until(lambda: upstream.state is State.RUNNING, what="running on after its task")

    assert await workers.standing(rid) is None  # running: it stands nowhere
    with pytest.raises(WorkerError) as running:
        await workers.variables(rid, 0)
    assert running.value.kind is Kind.NOT_PAUSED
    with pytest.raises(WorkerError) as unknown:
        await workers.continue_workers("ffffffff")
    assert unknown.value.kind is Kind.NOT_FOUND
    with pytest.raises(WorkerError) as off:
        workers.hangs.verdicts()
    assert off.value.kind is Kind.UNAVAILABLE
