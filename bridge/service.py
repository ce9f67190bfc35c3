"""What a person can do to workers: the one service behind every door of the bridge's process.

The HTTP API and the MCP tools call it; DAP sessions find their workers through it
(:meth:`Workers.attach`) and then talk DAP to them through the adapter's mux, which keeps each
session's own ids. The pdb and the web page are clients in other processes and come through
those doors. Each door keeps only its own shapes and wording: the service answers with
records, plain stack frames and values, and fails with a
:class:`~raydap.adapter.errors.WorkerError` whose kind the door translates once.
"""

from __future__ import annotations

import ast
import asyncio
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from raydap.adapter import AttachError, State, Upstream, WorkerFeed
from raydap.adapter.captures.mux import CaptureFeed
from raydap.adapter.errors import Kind, WorkerError
from raydap.adapter.sessions.session import Grant
from raydap.adapter.upstream import in_worker
from raydap.adapter.upstream.books import spec_of
from raydap.adapter.upstream.breakpoints import Given
from raydap.adapter.upstream.quirks import exception_line
from raydap.bridge.captures.service import CaptureService
from raydap.bridge.captures.store import Captures
from raydap.bridge.cluster.remote_stacks import RemoteStacks
from raydap.bridge.hangs import stacks
from raydap.bridge.hangs.outside_pause import OutsidePause
from raydap.bridge.hangs.service import HangService
from raydap.bridge.hangs.watch import HangWatch
from raydap.bridge.workers import follow, group
from raydap.bridge.workers.filters import WorkerFilter
from raydap.bridge.workers.follow import JobStatus
from raydap.bridge.workers.group_timeouts import Follows
from raydap.bridge.workers.holder import Holder
from raydap.bridge.workers.ranked_breakpoints import RankedBreakpoints, RankedLines
from raydap.bridge.workers.records import BreakpointRecord, RecordState
from raydap.bridge.workers.registry import Registry
from raydap.live.redact import DEFAULT as DEFAULT_REDACTOR
from raydap.live.redact import Redactor

Step = Literal["over", "into", "out"]
_STEP_COMMANDS: dict[Step, str] = {"over": "next", "into": "stepIn", "out": "stepOut"}
EVERY_WORKER = WorkerFilter()


@dataclass(frozen=True)
class Source:
    """Lines of a paused worker's file around a frame's line, read on the worker's node."""

    frame: dict[str, Any]
    first: int
    code: str


@dataclass(frozen=True)
class GroupPause:
    """What pausing a filter's running workers did: the ids paused, and each one not paused
    with why (``{"id", "reason"}``), as every door answers it."""

    paused: list[str]
    failed: list[dict[str, str]]

    @property
    def asked(self) -> list[str]:
        """Every worker asked to pause, paused or not."""
        return [*self.paused, *(f["id"] for f in self.failed)]

    def answer(self) -> dict[str, Any]:
        return {"paused": self.paused, "failed": self.failed}


@dataclass(frozen=True)
class BreakpointsGiven:
    """What one live worker made of a caller's breakpoints in one file."""

    worker: BreakpointRecord
    #: Per breakpoint asked, in order: ``{"line", "verified"}`` and the worker's ``message``.
    breakpoints: list[dict[str, Any]]
    #: Why the worker refused the whole list; None when it took it.
    refused: str | None = None
    #: Ranks of its job that may still be on their own collective timeout (the gate gave up
    #: waiting for them: docs/hangs.md).
    unprotected: tuple[str, ...] = ()

    @classmethod
    def of(cls, worker: BreakpointRecord, given: Given) -> BreakpointsGiven:
        return cls(worker, [
            {"line": share.get("line"), "verified": bool(share.get("verified"))}
            | ({"message": share["message"]} if share.get("message") else {})
            for share in given.shares
        ], given.refused, given.unprotected)  # fmt: skip


@dataclass(frozen=True)
class Feeds:
    """What a live feed of the bridge follows: every record's changes, new hang verdicts (None:
    the watch is off) and captures (None: captures are off)."""

    records: Registry
    hangs: HangWatch | None
    captures: Captures | None


@dataclass
class Workers:
    """The workers the bridge holds, and the running ones it can see, as a person acts on them."""

    holder: Holder
    #: Stacks of workers nobody holds (None: held workers only).
    remote_stacks: RemoteStacks | None = None
    #: Pausing a running worker in place, from outside (None: live workers only).
    outside_pause: OutsidePause | None = None
    #: Hang verdicts of watched jobs (None: the watch is off).
    hang_watch: HangWatch | None = None
    #: Whether a job still runs (a follow session ends with its job).
    job_status: JobStatus | None = None
    #: The filters of the follow sessions open now (their jobs are debugged).
    follows: Follows = field(default_factory=Follows)
    #: Capture points and captures (None: not kept by this bridge).
    capturing: CaptureService | None = None
    #: What stacks, snapshots and a view token's values hide (``raydap serve --redact``).
    redactor: Redactor = DEFAULT_REDACTOR
    #: Breakpoints on a rank set, kept for ranks whose coordinates come later.
    ranked: RankedBreakpoints = field(init=False)
    #: What the doors ask of the hang watch (``unavailable`` while it is off).
    hangs: HangService = field(init=False)

    def __post_init__(self) -> None:
        self.ranked = RankedBreakpoints(self.holder)
        self.hangs = HangService(self.hang_watch)

    @property
    def captures(self) -> CaptureService:
        if self.capturing is None:
            raise WorkerError("this bridge keeps no captures", Kind.UNAVAILABLE)
        return self.capturing

    # -- a DAP session's workers ---------------------------------------------------------------

    async def attach(self, arguments: dict[str, Any], grant: Grant) -> WorkerFeed | CaptureFeed:
        """The workers a DAP ``attach`` names: one (``breakpoint``), or those a filter follows,
        or a capture (``capture``), served read-only. The session then talks DAP to them
        through the adapter's mux (its own ids). Only a session that may debug counts its
        jobs as debugged (:mod:`.workers.group_timeouts`); one that only looks changes nothing."""
        if "capture" in arguments:
            wanted = arguments["capture"]
            if not isinstance(wanted, str) or not wanted:
                raise AttachError('"capture" is a capture id (`raydap captures`)', Kind.INVALID)
            return self.captures.feed(wanted)
        if grant.debugs:
            return await follow.resolve(self.holder, arguments, self.job_status, self.follows)
        return await follow.resolve(self.holder, arguments, self.job_status, None, looks=True)

    # -- reading ------------------------------------------------------------------------------

    def records(self, where: WorkerFilter = EVERY_WORKER) -> list[BreakpointRecord]:
        """Every worker listed (paused, live, connecting, failed) that ``where`` matches."""
        return [r for r in self.holder.registry.records() if where.matches(r)]

    def held(self) -> list[BreakpointRecord]:
        """The workers whose debugpy connection the bridge holds."""
        return [r for r in self.holder.registry.records() if r.id in self.holder.upstreams]

    def record(self, id_or_prefix: str) -> BreakpointRecord:
        """The record an id or unique prefix names; ``not_found`` otherwise."""
        return self.holder.registry.resolve(id_or_prefix)

    def feeds(self) -> Feeds:
        capturing = self.capturing
        return Feeds(self.holder.registry, self.hang_watch,
                     capturing.captures if capturing is not None else None)  # fmt: skip

    @property
    def handing_over(self) -> str:
        """Why workers are not to be acted on now (a new bridge takes them over), or ""."""
        return self.holder.handing_over

    def listed(self, record_id: str) -> BreakpointRecord | None:
        """The record of exactly this id, if the worker is still listed (it may have gone
        since it answered)."""
        return self.holder.registry.get(record_id)

    async def stacks(
        self, where: WorkerFilter, options: stacks.StackOptions | None = None
    ) -> dict[str, Any]:
        """Every matching worker's stack, held and running, merged into one tree."""
        options = dataclasses.replace(options or stacks.StackOptions(), redactor=self.redactor)
        return await stacks.stacks(self.holder, where, self.remote_stacks, options)

    async def snapshot(self, where: WorkerFilter = EVERY_WORKER) -> list[dict[str, Any]]:
        return await group.snapshot(self.holder, where, redactor=self.redactor)

    async def paused(self, worker: str, *, acts: bool = False) -> tuple[BreakpointRecord, Upstream]:
        """A held worker that is paused now; ``not_paused`` while it runs. ``acts``: the caller
        runs code in it or moves it (reading it does not count against ``--hold-timeout``)."""
        rid, upstream = await self.holder.held_worker(worker, touch=acts)
        record = self.holder.registry.get(rid)
        if record is None or upstream.state is not State.STOPPED:
            raise WorkerError(
                f"worker {rid} is running: pause_workers or wait_for_pause first", Kind.NOT_PAUSED
            )
        return record, upstream

    async def frame(self, worker: str, index: int) -> tuple[BreakpointRecord, dict[str, Any]]:
        """Frame ``index`` (0: the innermost) of a paused worker's stopped thread."""
        record, upstream = await self.paused(worker)
        return record, await group.frame_at(upstream, index)

    async def variables(
        self, worker: str, index: int
    ) -> tuple[BreakpointRecord, dict[str, Any], list[dict[str, Any]]]:
        """The locals of frame ``index`` of a paused worker, as debugpy shows them."""
        record, upstream = await self.paused(worker)
        frame = await group.frame_at(upstream, index)
        scopes = await upstream.request("scopes", {"frameId": frame["id"]})
        listed = (scopes.body or {}).get("scopes") or [] if scopes.success else []
        if not listed:
            raise WorkerError(f"{record.label} gave no scopes for frame {index}")
        answer = await upstream.request(
            "variables", {"variablesReference": listed[0]["variablesReference"]}
        )
        return record, frame, list((answer.body or {}).get("variables", []))

    async def source(
        self, worker: str, index: int, context_lines: int
    ) -> tuple[BreakpointRecord, Source]:
        """The lines around frame ``index``'s line, read where the worker runs."""
        record, upstream = await self.paused(worker)
        frame = await group.frame_at(upstream, index)
        path = str((frame.get("source") or {}).get("path") or "")
        line = int(frame.get("line") or 0)
        first = max(1, line - context_lines)
        reader = in_worker.read_lines(path, first, line + context_lines)
        text = await group.evaluate_in(upstream, frame["id"], reader, context="clipboard")
        try:
            code = str(ast.literal_eval(text))
        except (ValueError, SyntaxError):
            raise WorkerError(f"cannot read {path} in {record.label}: {text[:200]}") from None
        if not code:
            raise WorkerError(
                f"{path} cannot be read on {record.label}'s node (no such file?)", Kind.NOT_FOUND
            )
        return record, Source(frame, first, code)

    async def standing(self, worker: str) -> tuple[dict[str, Any] | None, str | None] | None:
        """Where a held worker that is paused stands now: its top frame (None if it cannot
        be read) and the stop's reason; None when it is not paused."""
        upstream = self.holder.upstreams.get(worker)
        if upstream is None or upstream.state is not State.STOPPED:
            return None
        try:
            _, frames = await upstream.stack(levels=1)
            frame: dict[str, Any] | None = frames[0]
        except WorkerError:
            frame = None
        stop = upstream.stops.top()
        body = stop.body if stop is not None and isinstance(stop.body, dict) else {}
        reason = body.get("reason")
        return frame, reason if isinstance(reason, str) else None

    async def wait_for_pause(
        self, where: WorkerFilter, count: int, timeout: float
    ) -> list[BreakpointRecord]:
        """Once ``count`` matching workers are paused, they; after ``timeout`` s, those that are."""
        registry = self.holder.registry

        def paused() -> list[BreakpointRecord]:
            return [
                r for r in registry.records() if r.state == RecordState.PAUSED and where.matches(r)
            ]

        enough = await registry.until(
            lambda: found if len(found := paused()) >= count else None, timeout
        )
        return enough if enough is not None else paused()

    # -- running code and moving workers -----------------------------------------------------

    async def evaluate(
        self, expression: str, *, worker: str | None = None,
        where: WorkerFilter = EVERY_WORKER, frame: int = 0,
    ) -> list[dict[str, str]]:  # fmt: skip
        """``expression`` in frame ``frame`` of one paused worker, or of every matching one side
        by side: each ``{"id", "result"}`` or ``{"id", "error"}``, with the error's
        ``exception`` line (debugpy answers with the whole traceback)."""
        if worker is None:
            results = await group.evaluate_all(self.holder, expression, where, frame=frame)
            return [with_exception(r) for r in results]
        record, upstream = await self.paused(worker, acts=True)
        try:
            value = await group.evaluate_one(upstream, expression, frame)
        except WorkerError as exc:
            return [with_exception({"id": record.id, "error": str(exc)})]
        return [{"id": record.id, "result": value}]

    async def give_breakpoints(
        self,
        owner: str,
        path: str,
        lines: Mapping[int, str | None],
        job: str | None,
        ranks: str | None = None,
    ) -> list[BreakpointsGiven]:
        """``owner``'s breakpoints in ``path`` (each line with its condition, or None) for every
        live held worker of ``job``, merged with other sessions' there by each worker's one
        owner of its breakpoints; no lines clears ``owner``'s. With ``ranks`` (a rank set:
        a job is then needed), they are ``owner``'s breakpoints for those ranks only, apart
        from those for every rank, and kept for ranks known later (:mod:`.ranked_breakpoints`)."""
        specs = [
            spec_of({"line": line, **({"condition": condition} if condition else {})})
            for line, condition in lines.items()
        ]
        if ranks is not None:
            if job is None:
                raise WorkerError("breakpoints on a rank set need the job", Kind.INVALID)
            ranked = RankedLines(job, path, ranks, tuple(specs))
            return [BreakpointsGiven.of(r, g) for r, g in await self.ranked.give(owner, ranked)]
        chosen = self.holder.live_upstreams(job)
        if not chosen:
            where = f"job {job}" if job else "any job"
            raise WorkerError(
                f"no live worker of {where} is held: run the job with raydap.live (see "
                "docs/live.md), or wait for its workers to start (list_workers shows them)",
                Kind.NOT_FOUND,
            )
        key = ("setBreakpoints", path)
        given = await asyncio.gather(*(
            u.breakpoints.give(owner, key, specs, {"source": {"path": path}}) for _, u in chosen
        ))  # fmt: skip
        return [BreakpointsGiven.of(r, g) for (r, _), g in zip(chosen, given, strict=True)]

    async def continue_workers(
        self, worker: str | None = None, where: WorkerFilter = EVERY_WORKER
    ) -> list[str]:
        """Continue one held worker (failing with why), or every matching paused one."""
        if worker is None:
            return await group.continue_all(self.holder, where)
        return [await self.holder.resume(worker)]

    async def pause_running(self, where: WorkerFilter) -> GroupPause:
        """Pause every matching held worker that runs."""
        outcomes = await group.pause_all(self.holder, where)
        return GroupPause(
            paused=[rid for rid, why in outcomes if why is None],
            failed=[{"id": rid, "reason": why} for rid, why in outcomes if why is not None],
        )

    async def pause(self, worker: str) -> BreakpointRecord:
        """Pause one running worker, held (live) or not (from outside, on its node); raises
        :class:`~raydap.bridge.hangs.outside_pause.PausePending` where it waits in native
        code, with where."""
        if self.outside_pause is None:
            raise WorkerError("this bridge cannot pause running workers", Kind.UNAVAILABLE)
        return await self.outside_pause.pause(worker)

    async def step(
        self, worker: str, kind: Step, timeout: float
    ) -> tuple[BreakpointRecord, BreakpointRecord | None]:
        """Step a paused worker; its record before, and once it stopped again (None if it did
        not within ``timeout`` s: it runs on)."""
        record, upstream = await self.paused(worker, acts=True)
        thread_id, _ = await upstream.stack(levels=1)
        response = await upstream.request(_STEP_COMMANDS[kind], {"threadId": thread_id})
        if not response.success:
            raise WorkerError(f"{record.label} refused to step: {response.message}")

        def stopped_again() -> BreakpointRecord | None:
            now = self.holder.registry.get(record.id)
            if now is None or now.state != RecordState.PAUSED:
                return None
            # The keeper gives a later stop its own time: this one is after the step.
            return now if now.paused_since > record.paused_since else None

        return record, await self.holder.registry.until(stopped_again, timeout)


def with_exception(result: dict[str, str]) -> dict[str, str]:
    """An evaluation's result, with its error's exception line beside debugpy's traceback."""
    line = exception_line(result.get("error"))
    return {**result, "exception": line} if line else result
