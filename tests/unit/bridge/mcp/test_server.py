"""Every MCP call gets an answer: checked, refused for a view token where it must be, audited
with the token's name, and an error result (never a lost request) when a tool fails."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import mcp_types as types
import pytest

from raydap.bridge.hangs.outside_pause import PausePending
from raydap.bridge.mcp.desk import Desk
from raydap.bridge.mcp.server import call
from raydap.bridge.server.auth import Token
from raydap.bridge.service import Workers, with_exception
from raydap.bridge.workers.holder import Holder
from raydap.bridge.workers.records import BreakpointRecord, ExceptionInfo
from raydap.bridge.workers.registry import Registry

VIEW = Token("bob", "view", "x" * 20)
DEBUG = Token("alice", "debug", "y" * 20)


class Audit:
    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []

    def __call__(self, action: str, **details: Any) -> None:
        self.entries.append({"action": action, **details})


def record(rid: str, **fields: Any) -> BreakpointRecord:
    return BreakpointRecord(id=rid, node_ip="10.0.0.5", paused_since=time.time(), **fields)


def answer(result: types.CallToolResult) -> dict[str, Any]:
    [content] = result.content
    assert isinstance(content, types.TextContent)
    parsed: dict[str, Any] = json.loads(content.text)
    return parsed


async def ask(desk: Desk, token: Token, tool: str, arguments: dict[str, Any], audit: Audit
              ) -> tuple[bool, dict[str, Any]]:  # fmt: skip
    result = await call(desk, token, "127.0.0.1", tool, arguments, audit)
    return bool(result.is_error), answer(result)


async def test_a_view_token_cannot_run_code_and_the_refusal_is_audited() -> None:
    audit, desk = Audit(), Desk(Workers(Holder(Registry())))
    error, said = await ask(desk, VIEW, "evaluate", {"expression": "1"}, audit)
    assert error and "'bob' may only look" in said["error"] and said["kind"] == "forbidden"
    error, said = await ask(desk, VIEW, "continue_workers", {}, audit)
    assert error and "debug token" in said["error"]
    assert [(e["action"], e["token"], e["tool"]) for e in audit.entries] == [
        ("mcp-refused", "bob", "evaluate"), ("mcp-refused", "bob", "continue_workers"),
    ]  # fmt: skip
    error, said = await ask(desk, VIEW, "list_workers", {}, audit)
    assert not error and said == {"workers": [], "count": 0}
    assert audit.entries[-1] == {"action": "mcp", "client": "127.0.0.1", "token": "bob",
                                 "tool": "list_workers", "arguments": {}}  # fmt: skip


async def test_unknown_tools_and_bad_arguments_are_answered_with_what_is_wrong() -> None:
    audit, desk = Audit(), Desk(Workers(Holder(Registry())))
    error, said = await ask(desk, DEBUG, "rm_rf", {}, audit)
    assert error and "no tool 'rm_rf'" in said["error"]
    error, said = await ask(desk, DEBUG, "source", {"worker": "a/b"}, audit)
    assert error and said["error"].startswith("bad arguments for source: worker:")
    error, said = await ask(desk, DEBUG, "source", {"worker": "nobody"}, audit)
    assert error and "nobody" in said["error"]  # no such worker: said, not raised
    assert said["kind"] == "not_found"
    assert [e["action"] for e in audit.entries] == ["mcp"]  # only the call that was run


async def test_a_bug_in_a_tool_becomes_an_error_result(monkeypatch: pytest.MonkeyPatch) -> None:
    async def broken(self: Desk, ask: Any) -> dict[str, Any]:
        raise KeyError("oops")

    monkeypatch.setattr(Desk, "list_workers", broken)
    error, said = await ask(Desk(Workers(Holder(Registry()))), DEBUG, "list_workers", {}, Audit())
    assert error and said["error"] == "list_workers failed in the bridge: KeyError('oops')"


async def test_workers_are_listed_with_rank_role_place_and_exception() -> None:
    registry = Registry()
    registry.put(record("a1", state="paused", job_id="02000000", rank=3, role="actor",
                        pid=42, kind="exception",
                        exception=ExceptionInfo(type="ValueError", message="bad")))  # fmt: skip
    registry.put(record("b2", state="running", job_id="03000000", live=True))
    error, said = await ask(Desk(Workers(Holder(registry))), VIEW, "list_workers",
                            {"filter": {"job": "02000000"}}, Audit())  # fmt: skip
    assert not error and said["count"] == 1
    [worker] = said["workers"]
    assert worker["id"] == "a1" and worker["rank"] == 3 and worker["role"] == "actor"
    assert worker["node"] == "10.0.0.5" and worker["pid"] == 42 and worker["job"] == "02000000"
    assert worker["exception"] == {"type": "ValueError", "message": "bad"}
    assert "parent" not in worker and "live" not in worker  # unknown or false: left out


async def test_wait_for_pause_returns_when_enough_workers_paused_or_says_none_did() -> None:
    registry = Registry()
    desk = Desk(Workers(Holder(registry)))
    registry.put(record("a1", state="running", job_id="02000000"))
    registry.put(record("b2", state="running", job_id="02000000"))
    waiting = asyncio.create_task(
        ask(desk, VIEW, "wait_for_pause", {"filter": {"job": "02000000"}, "count": 2}, Audit())
    )
    registry.put(record("a1", state="paused", job_id="02000000"))
    await asyncio.sleep(0.05)  # nothing happens: one of two paused
    assert not waiting.done()
    registry.put(record("b2", state="paused", job_id="02000000"))
    error, said = await asyncio.wait_for(waiting, 5)
    assert not error and {w["id"] for w in said["paused"]} == {"a1", "b2"}
    assert "timed_out" not in said

    started = time.monotonic()
    error, said = await ask(desk, VIEW, "wait_for_pause",
                            {"filter": {"job": "09000000"}, "timeout_s": 0.3}, Audit())  # fmt: skip
    assert not error and said["timed_out"] is True and said["paused"] == []
    assert said["message"] == "0 of the 1 awaited workers paused within 0.3 s"
    assert 0.3 <= time.monotonic() - started < 3


def test_differing_values_are_marked() -> None:
    registry = Registry()
    for rid, rank in (("a", 0), ("b", 1), ("c", 2)):
        registry.put(record(rid, rank=rank))
    desk = Desk(Workers(Holder(registry)))
    said = desk._marked([{"id": "a", "result": "4"}, {"id": "b", "result": "4"},
                         {"id": "c", "result": "5"}])  # fmt: skip
    assert [r.get("differs") for r in said["results"]] == [None, None, True]
    assert [r["rank"] for r in said["results"]] == [0, 1, 2] and said["distinct_values"] == 2
    tie = desk._marked([{"id": "a", "result": "4"}, {"id": "b", "result": "5"}])
    assert [r.get("differs") for r in tie["results"]] == [True, True]
    traceback = 'Traceback (most recent call last):\n  File "<string>", line 1\nNameError: y\n'
    failed = with_exception({"id": "b", "error": traceback})  # as the service answers
    same = desk._marked([{"id": "a", "result": "4"}, failed])
    assert all("differs" not in r for r in same["results"])
    assert same["results"][1]["error"] == "NameError: y"  # the exception, not the traceback


async def test_each_call_of_a_known_tool_is_measured_with_its_outcome() -> None:
    measured: list[tuple[str, str]] = []
    desk = Desk(Workers(Holder(Registry())))

    def measure(tool: str, seconds: float, outcome: str) -> None:
        assert 0 <= seconds < 5
        measured.append((tool, outcome))

    for token, tool, arguments in (
        (VIEW, "list_workers", {}),
        (VIEW, "evaluate", {"expression": "1"}),
        (DEBUG, "variables", {"worker": "nobody"}),
        (DEBUG, "no_such_tool", {}),
    ):
        await call(desk, token, "127.0.0.1", tool, arguments, Audit(), measure)
    assert measured == [("list_workers", "ok"), ("evaluate", "refused"), ("variables", "error")]


async def test_an_agent_asks_whether_a_job_is_hung_and_why() -> None:
    """The ``hangs`` tool, for a view token too: the watch's verdicts with their collective
    part, one job's on request, and a hint for a job that is not watched."""
    from raydap.bridge.hangs.desync import judge
    from raydap.bridge.hangs.verdicts import Verdict
    from raydap.bridge.hangs.watch import HangWatch, merged
    from tests.unit.bridge.hangs.test_desync import recorded

    holder = Holder(Registry())
    watch = HangWatch(holder, None, hang_after=60, interval=5)  # type: ignore[arg-type]
    [found] = judge(recorded("skip"))
    stack = Verdict(job="0a000000", state="suspected_hang", since=1.0, groups=[], stragglers=[],
                    summary="no progress: 3 ranks wait in all_reduce")  # fmt: skip
    from raydap.bridge.hangs.collective_reader import Finding
    from raydap.bridge.hangs.verdicts import HangMemory

    # What a watch knows is what it recalls (as from a replaced bridge): this verdict.
    watch.recall(HangMemory(verdicts={"0a000000": merged(stack, Finding(collective=found))}))
    desk = Desk(Workers(holder, hang_watch=watch))
    error, said = await ask(desk, VIEW, "hangs", {}, Audit())
    assert not error
    [job] = said["jobs"]
    assert job["collective"]["missing"] == [2] and job["collective"]["seq"] == 10
    assert job["summary"].startswith("no progress: all_reduce #10 (default_pg): rank 2 never")
    error, said = await ask(desk, VIEW, "hangs", {"job": "0b000000"}, Audit())
    assert said["jobs"] == [] and "not watched" in said["hint"]
    error, said = await ask(desk, VIEW, "hangs", {"job": "not hex"}, Audit())
    assert error and "bad arguments" in said["error"]
    error, said = await ask(Desk(Workers(holder)), VIEW, "hangs", {}, Audit())
    assert error and "hang watch is off" in said["error"] and said["kind"] == "unavailable"


async def test_a_pause_that_is_pending_is_an_answer_naming_where_the_worker_waits() -> None:
    """A pending pause is a kind of :class:`WorkerError` the service raises once; the MCP door
    says it as an answer, not a failure (the HTTP door as 202)."""

    class Waiting:
        async def pause(self, worker: str) -> BreakpointRecord:
            raise PausePending(worker, "in all_reduce (distributed_c10d.py:2806)")

    workers = Workers(Holder(Registry()))
    workers.outside_pause = Waiting()  # type: ignore[assignment]
    error, said = await ask(Desk(workers), DEBUG, "pause_workers", {"worker": "w1"}, Audit())
    assert not error
    assert said == {"pending": [{"id": "w1", "reason": "in all_reduce (distributed_c10d.py:2806)"}]}
