"""What each MCP tool does: a call of the workers service (:mod:`raydap.bridge.service`,
the one the HTTP API uses too), its answer shaped for an agent. Answers are plain dicts (JSON);
a problem an agent can act on is a :class:`WorkerError` from the service, whose kind says what
it is and whose words say what to do."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from raydap.bridge.captures.service import read_path
from raydap.bridge.captures.store import CaptureKind
from raydap.bridge.hangs.stacks import StackOptions
from raydap.bridge.mcp import catalog
from raydap.bridge.service import BreakpointsGiven, Workers
from raydap.bridge.workers import meshes
from raydap.bridge.workers.records import BreakpointRecord

#: Whose breakpoints these are in a worker's book: every agent's, shared (as one session).
AGENT = "mcp"


def summary(record: BreakpointRecord) -> dict[str, Any]:
    """A worker as an agent needs it: who, where, in what state; unknown fields left out."""
    found: dict[str, Any] = {
        "id": record.id,
        "state": record.state,
        "name": record.label,
        "job": record.job_id,
        "rank": record.rank,
        "role": record.role,
        "mesh": meshes.text(record.mesh) or None,
        "node": record.node_ip,
        "pid": record.pid,
        "live": record.live or None,
        "parent": record.parent,
        "error": record.error,
    }
    if record.location is not None:
        where = record.location
        found["at"] = {"path": where.path, "line": where.line, "function": where.function}
    if record.exception is not None:
        found["exception"] = record.exception.model_dump()
    return {k: v for k, v in found.items() if v is not None}


def _answered(given: BreakpointsGiven) -> dict[str, Any]:
    """What one worker made of the agent's breakpoints."""
    if given.refused is not None:
        return {"error": given.refused}
    unprotected = {"unprotected": list(given.unprotected)} if given.unprotected else {}
    return {"breakpoints": given.breakpoints, **unprotected}


def _frame_facts(frame: dict[str, Any]) -> dict[str, Any]:
    return {
        "function": frame.get("name"),
        "path": (frame.get("source") or {}).get("path"),
        "line": frame.get("line"),
    }


@dataclass
class Desk:
    workers: Workers

    # -- reading --------------------------------------------------------------------------

    async def list_workers(self, ask: catalog.ListWorkers) -> dict[str, Any]:
        chosen = [summary(r) for r in self.workers.records(ask.filter)]
        return {"workers": chosen, "count": len(chosen)}

    async def stacks(self, ask: catalog.Stacks) -> dict[str, Any]:
        answer = await self.workers.stacks(ask.filter, StackOptions(locals=ask.locals, by=ask.by))
        if ask.by is not None:
            del answer["tree"]  # its groups hold it, apart: an agent's context holds one copy
        answer["workers"] = [  # records, as list_workers shows them
            summary(BreakpointRecord.model_validate(w)) for w in answer.get("workers", [])
        ]
        if self.workers.hangs.on:
            answer["hang_verdicts"] = self.workers.hangs.verdicts(ask.filter.job).answer()["jobs"]
        return answer

    async def hangs(self, ask: catalog.Hangs) -> dict[str, Any]:
        listed = self.workers.hangs.verdicts(ask.job)
        answer = {k: v for k, v in listed.answer().items() if k in ("jobs", "hang_after")}
        if ask.job is not None and not listed.jobs:
            answer["hint"] = (
                f"job {ask.job} is not watched or runs nothing: jobs with live workers are "
                "watched; `raydap hangs --job ID` watches another"
            )
        return answer

    async def source(self, ask: catalog.Source) -> dict[str, Any]:
        record, source = await self.workers.source(ask.worker, ask.frame, ask.context_lines)
        facts = _frame_facts(source.frame)
        numbered = [
            f"{'→' if n == facts['line'] else ' '}{n:5d}  {content}"
            for n, content in enumerate(source.code.splitlines(), source.first)
        ]
        return {"worker": record.id, **facts, "code": "\n".join(numbered)}

    def as_viewer_sees(self, tool: str, answer: Any) -> Any:
        """A tool's answer as a view token is shown it: live values with their secrets hidden
        (stacks and captures hide them for everyone already; a debug token can run code)."""
        if tool == "variables" and isinstance(answer, dict):
            return {**answer, "variables": self.workers.redactor.variables(answer["variables"])}
        return answer

    async def variables(self, ask: catalog.Variables) -> dict[str, Any]:
        record, frame, listed = await self.workers.variables(ask.worker, ask.frame)
        found = [
            {"name": v.get("name"), "value": v.get("value"), "type": v.get("type")}
            for v in listed
            if not str(v.get("name", "")).startswith("__")
        ]
        return {"worker": record.id, **_frame_facts(frame), "variables": found}

    async def wait_for_pause(self, ask: catalog.WaitForPause) -> dict[str, Any]:
        paused_now = await self.workers.wait_for_pause(ask.filter, ask.count, ask.timeout_s)
        shown = await asyncio.gather(*(self._where(r) for r in paused_now))
        answer: dict[str, Any] = {"paused": shown, "count": len(shown)}
        if len(paused_now) < ask.count:
            answer["timed_out"] = True
            answer["message"] = (
                f"{len(paused_now)} of the {ask.count} awaited workers paused within "
                f"{ask.timeout_s:g} s"
            )
        return answer

    # -- running code and moving workers -----------------------------------------------------

    async def evaluate(self, ask: catalog.Evaluate) -> dict[str, Any]:
        results = await self.workers.evaluate(
            ask.expression, worker=ask.worker, where=ask.filter, frame=ask.frame
        )
        return self._marked(results)

    def _marked(self, results: list[dict[str, str]]) -> dict[str, Any]:
        """Results side by side, each with its worker's name and rank; ``differs`` on values
        unlike the most common one (the rank that is not like the others)."""
        values = Counter(r["result"] for r in results if "result" in r)
        top = values.most_common(2)
        # On a tie no value is the common one: then every value differs.
        common = top[0][0] if top and (len(top) == 1 or top[0][1] > top[1][1]) else None
        shown: list[dict[str, Any]] = []
        for result in results:
            record = self.workers.listed(result["id"])
            named: dict[str, Any] = {**result, "name": record.label if record else None}
            if "exception" in named:  # the exception, not debugpy's whole traceback
                named["error"] = named.pop("exception")
            if record is not None and record.rank is not None:
                named["rank"] = record.rank
            if len(values) > 1 and "result" in result and result["result"] != common:
                named["differs"] = True
            shown.append(named)
        if not shown:
            return {"results": [], "message": "no paused worker matches (wait_for_pause first)"}
        return {"results": shown, "distinct_values": len(values)}

    async def set_breakpoints(self, ask: catalog.SetBreakpoints) -> dict[str, Any]:
        return await self._give(ask, ask.lines, ask.condition)

    async def clear_breakpoints(self, ask: catalog.ClearBreakpoints) -> dict[str, Any]:
        return await self._give(ask, [])

    async def _give(
        self,
        ask: catalog.SetBreakpoints | catalog.ClearBreakpoints,
        lines: list[int],
        condition: str | None = None,
    ) -> dict[str, Any]:
        """The agent's breakpoints for ``ask.path`` in every live held worker of ``ask.job``
        (or of its rank set), and what each worker made of them."""
        asked = dict.fromkeys(lines, condition)
        path = ask.path
        given = await self.workers.give_breakpoints(AGENT, path, asked, ask.job, ask.ranks)
        return {"path": path, "workers": [
            {"id": g.worker.id, "name": g.worker.label, **_answered(g)} for g in given
        ]}  # fmt: skip

    # -- captures ---------------------------------------------------------------------------

    async def set_capture_point(self, ask: catalog.SetCapturePoint) -> dict[str, Any]:
        limits: dict[str, float] = {
            k: v for k in ("interval", "most", "budget_ms") if (v := getattr(ask, k)) is not None
        }
        if ask.expires_in is not None:
            limits["until"] = time.time() + ask.expires_in
        point = await self.workers.captures.set_point(
            f"{AGENT} (MCP)", ask.path, ask.line, condition=ask.condition, rank=ask.rank,
            ranks=ask.ranks, job=ask.job, limits=limits,
        )  # fmt: skip
        return point.model_dump(mode="json")

    async def clear_capture_point(self, ask: catalog.ClearCapturePoint) -> dict[str, Any]:
        await self.workers.captures.clear_point(ask.point)
        return {"cleared": ask.point}

    async def list_captures(self, ask: catalog.ListCaptures) -> dict[str, Any]:
        captures = self.workers.captures
        kind = CaptureKind(ask.kind) if ask.kind else None
        found = captures.list_captures(job=ask.job, rank=ask.rank, point=ask.point, kind=kind)
        return {
            "points": [
                p.model_dump(mode="json", exclude_none=True) for p in captures.list_points()
            ],
            "captures": [c.model_dump(mode="json", exclude_none=True) for c in found],
        }

    async def read_capture(self, ask: catalog.ReadCapture) -> dict[str, Any]:
        captures = self.workers.captures
        if ask.point is not None:
            assert ask.expression is not None  # the model checked
            return {"point": ask.point, "expression": ask.expression,
                    "ranks": captures.show(ask.point, ask.expression)}  # fmt: skip
        assert ask.capture is not None
        feed = captures.feed(ask.capture)
        capture = captures.get_capture(feed.id)
        if ask.expression is not None:
            return {"capture": capture.id,
                    "value": read_path(capture, ask.expression, ask.frame)}  # fmt: skip
        return capture.model_dump(mode="json", exclude_none=True)

    async def continue_workers(self, ask: catalog.Group) -> dict[str, Any]:
        return {"continued": await self.workers.continue_workers(ask.worker, ask.filter)}

    async def pause_workers(self, ask: catalog.Group) -> dict[str, Any]:
        if ask.worker is None:
            return (await self.workers.pause_running(ask.filter)).answer()
        record = await self.workers.pause(ask.worker)  # pending is a kind: the door says it
        return {"paused": [record.id]}

    async def step(self, ask: catalog.Step) -> dict[str, Any]:
        record, stopped = await self.workers.step(ask.worker, ask.kind, ask.timeout_s)
        if stopped is None:
            return {"worker": record.id, "running": True, "message": (
                f"it did not stop again within {ask.timeout_s:g} s (it runs on; "
                "wait_for_pause or pause_workers)")}  # fmt: skip
        return {"worker": record.id, "paused": await self._where(stopped)}

    # -- helpers ------------------------------------------------------------------------------

    async def _where(self, record: BreakpointRecord) -> dict[str, Any]:
        """A paused worker's summary with where it stands, asked of it now (the record's
        location is filled in a moment after the stop)."""
        shown = summary(record)
        stop = await self.workers.standing(record.id)
        if stop is not None:
            frame, reason = stop
            if frame is not None:
                shown["at"] = _frame_facts(frame)
            if reason is not None:
                shown["reason"] = reason
        return shown
