"""The holder's handling of a worker it cannot reach (real sockets, no worker behind them)."""

import socket
import time

import pytest

from raydap.adapter import AttachError
from raydap.bridge.cluster.dashboard import WorkerRow
from raydap.bridge.cluster.discovery import PausedWorker
from raydap.bridge.cluster.live_marks import LiveMark
from raydap.bridge.workers.holder import Holder, record_id
from raydap.bridge.workers.registry import Registry


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_an_unreachable_paused_worker_is_listed_as_failed_with_the_reason() -> None:
    registry = Registry()
    holder = Holder(registry)
    worker = WorkerRow(
        worker_id="ab" * 28, ip="127.0.0.1", pid=4242, debugger_port=closed_port(),
        num_paused_threads=1,
    )  # fmt: skip
    holder.hold(PausedWorker(worker, time.time()))
    rid = record_id(worker.worker_id)
    with pytest.raises(AttachError, match="refuses connections"):
        await holder.held_worker(rid)
    record = registry.get(rid)
    assert record is not None and record.state == "failed"
    assert "debugpy's adapter has exited" in (record.error or "")
    assert holder.is_known(worker.worker_id)  # not retried at once
    with pytest.raises(AttachError, match=f"cannot debug {rid}"):
        await holder.held_worker(rid)

    holder.still_paused({worker.worker_id})
    assert rid in registry  # still paused: still listed
    holder.still_paused(set())
    assert rid not in registry  # no longer paused: forgotten
    await holder.close()


async def test_a_live_workers_missing_hooks_are_on_its_record() -> None:
    """What a live worker's mark says it lacks (:mod:`raydap.live.compat`) is shown on its
    record, where the doors and ``raydap doctor`` read it."""
    registry = Registry()
    holder = Holder(registry)
    worker = WorkerRow(worker_id="cd" * 28, ip="127.0.0.1", pid=4243,
                       debugger_port=closed_port())  # fmt: skip
    lacking = ("pydevd.PyDB.handle_breakpoint_condition: pydevd.PyDB.x is gone",)
    holder.hold(PausedWorker(worker, time.time()), live=LiveMark(pid=4243, unsupported=lacking))
    record = registry.get(record_id(worker.worker_id))
    assert record is not None and record.live and record.unsupported == list(lacking)
    await holder.close()
