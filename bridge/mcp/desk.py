"""What each MCP tool does, on the workers the bridge holds: the same holder, group commands,
merged stacks and pauses the HTTP API and DAP sessions use. Answers are plain dicts (JSON);
a problem an agent can act on raises a :class:`WorkerError` whose kind says what it is and
whose words say what to do."""

from __future__ import annotations

import ast
import asyncio
from collections import Counter
from dataclasses import dataclass
from typing import Any

from raydap.adapter import State, Upstream, UpstreamError, in_worker
from raydap.adapter.breakpoints import spec_of
from raydap.adapter.errors import Kind, WorkerError
from raydap.adapter.quirks import exception_line
from raydap.bridge.cluster.remote_stacks import RemoteStacks
from raydap.bridge.mcp import catalog
from raydap.bridge.workers import group, stacks
from raydap.bridge.workers.hang_watch import HangWatch
from raydap.bridge.workers.holder import Holder
from raydap.bridge.workers.outside_pause import (
    OutsidePause,
    PausePending,
)
from raydap.bridge.workers.records import BreakpointRecord

#: Whose breakpoints these are in a worker's book: every agent's, shared (as one session).
AGENT = "mcp"
STEPS = {"over": "next", "into": "stepIn", "out": "stepOut"}


def summary(record: BreakpointRecord) -> dict[str, Any]:
    """A worker as an agent needs it: who, where, in what state; unknown fields left out."""
    found: dict[str, Any] = {
        "id": record.id,
        "state": record.state,
        "name": record.label,
        "job": record.job_id,
        "rank": record.rank,
        "role": record.role,
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


def _frame_facts(frame: dict[str, Any]) -> dict[str, Any]:
    return {
        "function": frame.get("name"),
        "path": (frame.get("source") or {}).get("path"),
        "line": frame.get("line"),
    }


@dataclass
class Desk:
    holder: Holder
    remote_stacks: RemoteStacks | None = None
    outside_pause: OutsidePause | None = None
    hang_watch: HangWatch | None = None

    # -- reading --------------------------------------------------------------------------

    async def list_workers(self, ask: catalog.ListWorkers) -> dict[str, Any]:
        chosen = [summary(r) for r in self.holder.registry.records() if ask.filter.matches(r)]
        return {"workers": chosen, "count": len(chosen)}

    async def stacks(self, ask: catalog.Stacks) -> dict[str, Any]:
        options = stacks.StackOptions(locals=ask.locals)
        answer = await stacks.stacks(self.holder, ask.filter, self.remote_stacks, options)
        answer["workers"] = [  # records, as list_workers shows them
            summary(BreakpointRecord.model_validate(w)) for w in answer.get("workers", [])
        ]
        if self.hang_watch is not None:
            answer["hang_verdicts"] = [
                v.model_dump(mode="json")
                for v in self.hang_watch.verdicts()
                if ask.filter.job is None or v.job == ask.filter.job
            ]
        return answer

    async def hangs(self, ask: catalog.Hangs) -> dict[str, Any]:
        if self.hang_watch is None:
            raise WorkerError(
                "the bridge's hang watch is off (raydap serve --hang-watch)", Kind.UNAVAILABLE
            )
        verdicts = [v for v in self.hang_watch.verdicts() if ask.job is None or v.job == ask.job]
        answer: dict[str, Any] = {
            "jobs": [v.model_dump(mode="json") for v in verdicts],
            "hang_after": self.hang_watch.judge.hang_after,
        }
        if ask.job is not None and not verdicts:
            answer["hint"] = (
                f"job {ask.job} is not watched or runs nothing: jobs with live workers are "
                "watched; `raydap hangs --job ID` watches another"
            )
        return answer

    async def source(self, ask: catalog.Source) -> dict[str, Any]:
        record, upstream = await self._paused(ask.worker)
        frame = await self._frame(upstream, ask.frame)
        facts = _frame_facts(frame)
        path, line = str(facts["path"] or ""), int(facts["line"] or 0)
        first = max(1, line - ask.context_lines)
        reader = in_worker.read_lines(path, first, line + ask.context_lines)
        text = await self._evaluate(upstream, frame["id"], reader, context="clipboard")
        try:
            code = str(ast.literal_eval(text))
        except (ValueError, SyntaxError):
            raise WorkerError(f"cannot read {path} in {record.label}: {text[:200]}") from None
        if not code:
            raise WorkerError(
                f"{path} cannot be read on {record.label}'s node (no such file?)", Kind.NOT_FOUND
            )
        numbered = [
            f"{'→' if n == line else ' '}{n:5d}  {content}"
            for n, content in enumerate(code.splitlines(), first)
        ]
        return {"worker": record.id, **facts, "code": "\n".join(numbered)}

    async def variables(self, ask: catalog.Variables) -> dict[str, Any]:
        record, upstream = await self._paused(ask.worker)
        frame = await self._frame(upstream, ask.frame)
        scopes = await upstream.request("scopes", {"frameId": frame["id"]})
        listed = (scopes.body or {}).get("scopes") or [] if scopes.success else []
        if not listed:
            raise WorkerError(f"{record.label} gave no scopes for frame {ask.frame}")
        answer = await upstream.request(
            "variables", {"variablesReference": listed[0]["variablesReference"]}
        )
        found = [
            {"name": v.get("name"), "value": v.get("value"), "type": v.get("type")}
            for v in (answer.body or {}).get("variables", [])
            if not str(v.get("name", "")).startswith("__")
        ]
        return {"worker": record.id, **_frame_facts(frame), "variables": found}

    async def wait_for_pause(self, ask: catalog.WaitForPause) -> dict[str, Any]:
        registry = self.holder.registry

        def paused() -> list[BreakpointRecord]:
            return [r for r in registry.records() if r.state == "paused" and ask.filter.matches(r)]

        enough = await registry.until(
            lambda: found if len(found := paused()) >= ask.count else None, ask.timeout_s
        )
        paused_now = enough if enough is not None else paused()
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
        if ask.worker is not None:
            record, upstream = await self._paused(ask.worker)
            try:
                value = await group.evaluate_one(upstream, ask.expression, ask.frame)
                results = [{"id": record.id, "result": value}]
            except UpstreamError as exc:
                results = [{"id": record.id, "error": str(exc)}]
        else:
            results = await group.evaluate_all(
                self.holder, ask.expression, ask.filter, frame=ask.frame
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
            record = self.holder.registry.get(result["id"])
            named: dict[str, Any] = {**result, "name": record.label if record else None}
            if "error" in result:  # the exception, not debugpy's whole traceback
                named["error"] = exception_line(result["error"]) or result["error"]
            if record is not None and record.rank is not None:
                named["rank"] = record.rank
            if len(values) > 1 and "result" in result and result["result"] != common:
                named["differs"] = True
            shown.append(named)
        if not shown:
            return {"results": [], "message": "no paused worker matches (wait_for_pause first)"}
        return {"results": shown, "distinct_values": len(values)}

    async def set_breakpoints(self, ask: catalog.SetBreakpoints) -> dict[str, Any]:
        condition = {"condition": ask.condition} if ask.condition else {}
        specs = [spec_of({"line": line, **condition}) for line in dict.fromkeys(ask.lines)]
        return await self._give(ask.path, ask.job, specs)

    async def clear_breakpoints(self, ask: catalog.ClearBreakpoints) -> dict[str, Any]:
        return await self._give(ask.path, ask.job, [])

    async def _give(self, path: str, job: str | None, specs: list[str]) -> dict[str, Any]:
        """Give every live held worker of ``job`` the agent's ``specs`` for ``path`` (merged
        with what editors' sessions set there), and say what each worker made of them."""
        chosen = [
            (r, u)
            for r in self.holder.registry.records()
            if r.live
            and (job is None or r.job_id == job)
            and (u := self.holder.upstreams.get(r.id)) is not None
            and u.state in (State.RUNNING, State.STOPPED)
        ]
        if not chosen:
            where = f"job {job}" if job else "any job"
            raise WorkerError(
                f"no live worker of {where} is held: run the job with raydap.live (see "
                "docs/live.md), or wait for its workers to start (list_workers shows them)",
                Kind.NOT_FOUND,
            )
        answers = await asyncio.gather(*(self._give_one(u, path, specs) for _, u in chosen))
        return {"path": path, "workers": [
            {"id": r.id, "name": r.label, **answer}
            for (r, _), answer in zip(chosen, answers, strict=True)
        ]}  # fmt: skip

    async def _give_one(self, upstream: Upstream, path: str, specs: list[str]) -> dict[str, Any]:
        """The agent's share of ``path`` in one worker, through the worker's one owner of its
        breakpoints (editors' sessions give theirs there too)."""
        key = ("setBreakpoints", path)
        given = await upstream.breakpoints.give(AGENT, key, specs, {"source": {"path": path}})
        if given.refused is not None:
            return {"error": given.refused}
        return {
            "breakpoints": [
                {"line": share.get("line"), "verified": bool(share.get("verified"))}
                | ({"message": share["message"]} if share.get("message") else {})
                for share in given.shares
            ]
        }

    async def continue_workers(self, ask: catalog.Group) -> dict[str, Any]:
        if ask.worker is None:
            return {"continued": await group.continue_all(self.holder, ask.filter)}
        return {"continued": [await self.holder.resume(ask.worker)]}

    async def pause_workers(self, ask: catalog.Group) -> dict[str, Any]:
        if ask.worker is None:
            outcomes = await group.pause_all(self.holder, ask.filter)
            return {
                "paused": [rid for rid, why in outcomes if why is None],
                "failed": [{"id": rid, "reason": why} for rid, why in outcomes if why is not None],
            }
        if self.outside_pause is None:
            raise WorkerError("this bridge cannot pause running workers", Kind.UNAVAILABLE)
        try:
            record = await self.outside_pause.pause(ask.worker)
        except PausePending as pending:
            return {"pending": [{"id": pending.rid, "reason": pending.reason}]}
        return {"paused": [record.id]}

    async def step(self, ask: catalog.Step) -> dict[str, Any]:
        record, upstream = await self._paused(ask.worker)
        thread_id, _ = await upstream.stack(levels=1)
        response = await upstream.request(STEPS[ask.kind], {"threadId": thread_id})
        if not response.success:
            raise WorkerError(f"{record.label} refused to step: {response.message}")

        def stopped_again() -> BreakpointRecord | None:
            now = self.holder.registry.get(record.id)
            if now is None or now.state != "paused":
                return None
            # The keeper gives a later stop its own time: this one is after the step.
            return now if now.paused_since > record.paused_since else None

        stopped = await self.holder.registry.until(stopped_again, ask.timeout_s)
        if stopped is None:
            return {"worker": record.id, "running": True, "message": (
                f"it did not stop again within {ask.timeout_s:g} s (it runs on; "
                "wait_for_pause or pause_workers)")}  # fmt: skip
        return {"worker": record.id, "paused": await self._where(stopped)}

    # -- helpers ------------------------------------------------------------------------------

    async def _paused(self, wanted: str) -> tuple[BreakpointRecord, Upstream]:
        rid, upstream = await self.holder.held_worker(wanted)
        record = self.holder.registry.get(rid)
        if record is None or upstream.state is not State.STOPPED:
            raise WorkerError(
                f"worker {rid} is running: pause_workers or wait_for_pause first", Kind.NOT_PAUSED
            )
        return record, upstream

    async def _frame(self, upstream: Upstream, index: int) -> dict[str, Any]:
        _, frames = await upstream.stack(levels=index + 1)
        if index >= len(frames):
            raise WorkerError(
                f"the stack has {len(frames)} frames: frame is 0 to {len(frames) - 1}",
                Kind.NOT_FOUND,
            )
        return frames[index]

    async def _evaluate(
        self, upstream: Upstream, frame_id: int, expression: str, context: str = "repl"
    ) -> str:
        arguments = {"expression": expression, "frameId": frame_id, "context": context}
        response = await upstream.request("evaluate", arguments)
        if not response.success:
            raise WorkerError(response.message or "evaluation failed")
        return str((response.body or {}).get("result", ""))

    async def _where(self, record: BreakpointRecord) -> dict[str, Any]:
        """A paused worker's summary with where it stands, asked of it now (the record's
        location is filled in a moment after the stop)."""
        shown = summary(record)
        upstream = self.holder.upstreams.get(record.id)
        if upstream is not None and upstream.state is State.STOPPED:
            try:
                _, frames = await upstream.stack(levels=1)
                shown["at"] = _frame_facts(frames[0])
            except (UpstreamError, IndexError):
                pass
            stop = upstream.top_stop()
            if stop is not None and isinstance(stop.body, dict):
                shown["reason"] = stop.body.get("reason")
        return shown
