"""A pause answers within its time: a held worker that does not stop (its main thread waits
in native code) is answered pending, saying where it waits. debugpy, the dashboard and the
node's py-spy stand in here; the real ones: tests/e2e/test_hangs.py."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from raydap.adapter import State
from raydap.bridge.cluster.pyspy import parse_json
from raydap.bridge.cluster.remote_stacks import Reading
from raydap.bridge.hangs.outside_pause import OutsidePause, PausePending
from raydap.bridge.workers.holder import Holder
from raydap.bridge.workers.records import BreakpointRecord
from raydap.bridge.workers.registry import Registry
from raydap.protocol import Response

C10D = "/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py"


class Blocked:
    """A live worker's debugpy that accepts a pause its main thread never reaches."""

    state = State.RUNNING

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def request(self, command: str, arguments: Any = None) -> Response:
        self.asked.append(command)
        body = {"threads": [{"id": 1, "name": "MainThread"}]} if command == "threads" else {}
        return Response(request_seq=1, success=True, command=command, body=body)


class Nodes:
    async def read(self, targets: dict[str, Any], *_: Any) -> dict[str, Any]:
        frames = [{"name": "all_reduce", "filename": C10D, "line": 3252},
                  {"name": "train", "filename": "/job/train.py", "line": 48}]  # fmt: skip
        text = json.dumps([{"thread_name": "MainThread", "frames": frames}])
        return {worker: Reading(parse_json(text)) for worker in targets}


@pytest.mark.parametrize("where", [Nodes(), None])
async def test_a_rank_waiting_in_native_code_is_answered_pending_in_time(where: Any) -> None:
    registry = Registry()
    holder = Holder(registry)
    registry.put(BreakpointRecord(id="r0", node_ip="10.0.0.1", node_id="n1", pid=7,
                                  paused_since=0, state="running", live=True))  # fmt: skip
    upstream = Blocked()
    holder.upstreams["r0"] = upstream  # type: ignore[assignment]
    pauser = OutsidePause(holder, None, None, wait=0.2, remote_stacks=where)  # type: ignore[arg-type]
    started = time.monotonic()
    with pytest.raises(PausePending) as pending:
        await pauser.pause("r0")
    assert time.monotonic() - started < 2
    assert upstream.asked == ["threads", "pause"]  # requested, and left requested
    assert pending.value.rid == "r0"
    if where is not None:
        assert pending.value.reason.startswith(f"blocked in all_reduce in {C10D}:3252")
    else:
        assert pending.value.reason.startswith("it runs native code")
    assert "when that call returns" in pending.value.reason
