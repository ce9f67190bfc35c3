"""The state of a pdb session over DAP: which workers are paused, which one and which frame
the prompt is in, and the requests every command builds on.

All of it runs on the event loop of the :class:`DapClient`; the prompt (``console``) calls
in from the main thread. The commands themselves are in ``handlers``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from raydap.adapter.upstream import in_worker
from raydap.bridge.client.dap_client import DapClient
from raydap.bridge.client.pdb import evaluation, source
from raydap.bridge.client.pdb.breakpoints import BreakpointTable

_SHOWN_OUTPUT = {"stdout", "stderr", "console", "important"}


def _read_local(path: str) -> str | None:
    """The file's text where this terminal runs, if it is there (same machine, or a checkout)."""
    try:
        return Path(path).read_text(errors="replace") if Path(path).is_file() else None
    except OSError:
        return None


class SessionEnded(Exception):
    """The bridge ended the session (the worker's task finished, the followed job ended)."""


@dataclass
class Paused:
    """A thread stopped in a worker, as its ``stopped`` event said."""

    thread_id: int
    reason: str
    description: str = ""
    text: str = ""


@dataclass
class Debugger:
    """One ``raydap attach`` session: one worker, or every worker a follow session joins."""

    client: DapClient
    out: Callable[[str], None] = print
    #: A follow session: several workers, and ``c`` moves on to the next paused one.
    follow: bool = False
    paused: dict[int, Paused] = field(default_factory=dict)
    #: The worker each thread is in, as the bridge gives it (``key``, ``label``, ``task``,
    #: ``pid``, ``node``).
    thread_workers: dict[int, dict[str, Any]] = field(default_factory=dict)
    current: int | None = None
    frames: list[dict[str, Any]] = field(default_factory=list)
    index: int = 0
    breakpoints: BreakpointTable = field(default_factory=BreakpointTable)
    #: ``display`` expressions with their last values, per function (``(path, name)``), as
    #: pdb keeps them per frame.
    all_displays: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    #: The worker of a single-worker session, from its ``process`` event.
    process_worker: dict[str, Any] = field(default_factory=dict)
    ended: str | None = None
    #: Where a repeated ``list`` goes on from.
    list_next: int | None = None
    exited: set[int] = field(default_factory=set)
    _sources: dict[str, list[str] | None] = field(default_factory=dict)
    _seen: int = 0

    # -- events -------------------------------------------------------------------------------

    def drain(self) -> None:
        """Take in every event that arrived: stops, resumes, exits, the worker's output."""
        events = self.client.events
        while self._seen < len(events):
            message = events[self._seen]
            self._seen += 1
            body = message.body or {}
            name = message.event
            if name == "stopped" and isinstance(body.get("threadId"), int):
                thread = body["threadId"]
                self.paused[thread] = Paused(
                    thread, str(body.get("reason", "")),
                    str(body.get("description") or ""), str(body.get("text") or ""),
                )  # fmt: skip
            elif name == "continued":
                if body.get("allThreadsContinued") and not self.follow:
                    self.paused.clear()
                else:
                    self.paused.pop(body.get("threadId", -1), None)
            elif name == "thread" and body.get("reason") == "exited":
                self.paused.pop(body.get("threadId", -1), None)
                self.exited.add(body.get("threadId", -1))
            elif name == "process":
                worker = body.get("worker")
                self.process_worker = worker if isinstance(worker, dict) else {}
            elif name == "output" and body.get("category", "console") in _SHOWN_OUTPUT:
                text = str(body.get("output", ""))
                if text.strip():
                    self.out(text.rstrip("\n"))
            elif name in ("terminated", "exited") and self.ended is None:
                self.ended = "the session ended"

    async def catch_up(self) -> None:
        """Show what arrived while a command ran, before the prompt is drawn again.

        A follow session's other workers join while the first stop is shown; their
        announcements reach this client before the answers to that stop's requests, so
        draining here shows them above the prompt rather than among the next command's lines.
        """
        self.drain()

    async def wait_for_stop(self, thread: int | None = None, *, show: bool = True) -> None:
        """Until ``thread`` (or, without one, any thread) is paused; then go there."""
        said = False
        while True:
            self.drain()
            if thread is not None and thread in self.paused:
                await self.select(thread, show=show)
                return
            if thread is None and self.paused:
                await self.select(next(iter(self.paused)), show=show)
                return
            if self.ended is not None or self.client.closed:
                raise SessionEnded(self.ended or "the bridge closed the connection")
            try:
                await self.client.wait_more(self._seen, timeout=None if said else 1.0)
            except asyncio.TimeoutError:  # TimeoutError from 3.11 on
                what = "the next paused worker" if self.follow else "the worker to stop"
                self.out(f"... waiting for {what} (Ctrl-C leaves)")
                said = True
            if thread in self.exited:
                thread = None  # its worker is gone (task finished): any next stop will do

    async def live_threads(self) -> list[int]:
        response = await self.client.request("threads", check=False)
        threads = (response.body or {}).get("threads", []) if response.success else []
        for entry in threads:
            worker = entry.get("worker")
            self.thread_workers[entry["id"]] = worker if isinstance(worker, dict) else {}
        return [entry["id"] for entry in threads]

    async def select(self, thread: int, *, show: bool = True) -> None:
        """Make ``thread`` current, at its newest frame, and show where it is."""
        self.current = thread
        response = await self.client.request("stackTrace", {"threadId": thread})
        self.frames = list((response.body or {}).get("stackFrames", []))
        self.index = 0
        self.list_next = None
        if thread not in self.thread_workers:
            await self.live_threads()
        if show:
            await self.show_stop()

    async def show_stop(self) -> None:
        """What pdb prints at a stop: the exception if any, where, and what changed."""
        assert self.current is not None
        thread = self.current
        stop = self.paused[thread]
        if self.follow:
            self.out(f"[{self.worker_label(thread)}]")
        if stop.reason == "exception":
            self.out(f"*** {stop.text}: {stop.description}".rstrip(": "))
        await self.breakpoint_hit()
        await self.show_frame()
        await self.refresh_displays()

    async def breakpoint_hit(self) -> None:
        """Count a breakpoint hit; a temporary one is deleted, as pdb does."""
        stop = self.paused.get(self.current or -1)
        if stop is None or "breakpoint" not in stop.reason or not self.frames:
            return
        path, line, function = self.where(self.frames[0])
        for entry in self.breakpoints.hit(path, line, function):
            if entry.temporary:
                self.breakpoints.remove(entry.number)
                self.out(f"Deleted breakpoint {entry.number} at {entry.where}")
                await self.send_breakpoints(entry.path, function=bool(entry.function))
            else:
                self.breakpoints.change(entry.number, hits=entry.hits + 1, ignore=0)

    # -- frames and source --------------------------------------------------------------------

    @property
    def frame(self) -> dict[str, Any]:
        if self.current is None or not self.frames:
            raise LookupError("no worker is paused here")
        return self.frames[self.index]

    @staticmethod
    def where(frame: dict[str, Any]) -> tuple[str, int, str]:
        path = str((frame.get("source") or {}).get("path") or "<unknown>")
        return path, int(frame.get("line") or 0), str(frame.get("name") or "?")

    async def show_frame(self, frame: dict[str, Any] | None = None, marker: str = "> ") -> None:
        frame = frame or self.frame
        path, line, function = self.where(frame)
        self.out(marker + source.location(path, line, function))
        text = source.current_line(await self.lines(frame), line)
        if text:
            self.out(text)

    async def lines(self, frame: dict[str, Any]) -> list[str] | None:
        """The source of a frame's file: the bridge's ``source`` when it gives a reference,
        else the file here, else read by the worker (another node's file)."""
        origin = frame.get("source") or {}
        path = str(origin.get("path") or "")
        if path in self._sources:
            return self._sources[path]
        text: str | None = None
        reference = origin.get("sourceReference")
        if isinstance(reference, int) and reference > 0:
            response = await self.client.request(
                "source", {"source": origin, "sourceReference": reference}, check=False
            )
            text = (response.body or {}).get("content") if response.success else None
        elif path and (local := await asyncio.to_thread(_read_local, path)) is not None:
            text = local
        elif path:
            reader = in_worker.read_file(path)
            answer = await self.evaluate(reader, frame_id=int(frame["id"]), context="clipboard")
            text = evaluation.decode(answer) if answer is not None else None
        self._sources[path] = text.splitlines() if text else None
        return self._sources[path]

    # -- Python in the worker -----------------------------------------------------------------

    async def evaluate(
        self, expression: str, *, frame_id: int | None = None, context: str = "repl"
    ) -> str | None:
        """The worker's answer, or ``None`` after printing the error as pdb does."""
        frame = self.frame["id"] if frame_id is None else frame_id
        response = await self.client.request(
            "evaluate",
            {"expression": expression, "frameId": frame, "context": context},
            check=False,
        )
        self.drain()  # what the code printed comes first
        if not response.success:
            self.out(evaluation.error_line(response.message))
            return None
        return str((response.body or {}).get("result", ""))

    async def show(self, expression: str, how: str = "repr") -> str | None:
        """The text pdb prints for ``expression`` (``p``, ``pp``, ``whatis``, echo)."""
        if self.worker().get("capture"):  # captured values, already shown as text; nothing runs
            return await self.evaluate(expression, context="watch")
        answer = await self.evaluate(evaluation.shown(expression, how))
        return None if answer is None else evaluation.decode(answer) or answer

    async def run_python(self, text: str) -> None:
        """A line of Python, as pdb runs it: every expression statement echoed."""
        try:
            pieces = evaluation.split(text)
        except SyntaxError as exc:
            self.out(evaluation.syntax_error(exc))
            return
        for piece in pieces:
            if piece.is_expression:
                value = await self.show(piece.source, "echo")
                if value is None:
                    return
                if value:
                    self.out(value)
            elif await self.evaluate(piece.source, context="repl") is None:
                return

    @property
    def displays(self) -> dict[str, str]:
        """The ``display`` expressions of the current frame's function."""
        path, _, function = self.where(self.frame)
        return self.all_displays.setdefault((path, function), {})

    async def refresh_displays(self) -> None:
        for expression, old in list(self.displays.items()):
            answer = await self.client.request(
                "evaluate",
                {"expression": evaluation.shown(expression), "frameId": self.frame["id"],
                 "context": "repl"},
                check=False,
            )  # fmt: skip
            if not answer.success:  # pdb shows what it raised
                new = f"** raised {evaluation.error_line(answer.message)[4:]} **"
            else:
                result = str((answer.body or {}).get("result", ""))
                new = evaluation.decode(result) or result
            if new != old:
                self.displays[expression] = new
                self.out(f"display {expression}: {new}  [old: {old}]")

    # -- breakpoints --------------------------------------------------------------------------

    async def send_breakpoints(
        self, path: str, *, function: bool = False, extra: tuple[int, ...] = ()
    ) -> list[dict[str, Any]]:
        """Send the table's breakpoints of ``path`` (or the function breakpoints); the
        worker's verdict on each, in order."""
        if function:
            command, arguments = "setFunctionBreakpoints", self.breakpoints.function_requests()
        else:
            command, arguments = "setBreakpoints", self.breakpoints.line_requests(path)
            arguments["breakpoints"] += [{"line": line} for line in extra]
        response = await self.client.request(command, arguments, check=False)
        if not response.success:
            self.out(evaluation.error_line(response.message))
            return []
        return list((response.body or {}).get("breakpoints", []))

    # -- workers ------------------------------------------------------------------------------

    def worker(self, thread: int | None = None) -> dict[str, Any]:
        """The facts of the worker a thread is in (the current one's by default)."""
        found = self.thread_workers.get(thread if thread is not None else self.current or -1)
        return found or self.process_worker

    def worker_label(self, thread: int | None = None) -> str:
        """The worker a thread is in: ``square (pid 12 on 10.0.0.3)``."""
        return str(self.worker(thread).get("label") or "worker")

    def prompt(self) -> str:
        worker = self.worker()
        task, pid, rank = worker.get("task"), worker.get("pid"), worker.get("rank")
        short = f"{task} pid {pid}" if task and pid else self.worker_label()
        if isinstance(rank, int) and task and pid:
            short = f"rank {rank} {short}"
        if worker.get("capture"):  # read-only: said where the user types
            short = f"capture {short}"
        return f"(raydap {short}) "

    async def complete(self, text: str) -> list[str]:
        """Names that complete the end of ``text``, from the worker (DAP ``completions``)."""
        if self.current is None or not self.frames:
            return []
        response = await self.client.request(
            "completions",
            {"text": text, "column": len(text) + 1, "frameId": self.frame["id"]},
            check=False,
            timeout=5,
        )
        targets = (response.body or {}).get("targets", []) if response.success else []
        return [str(t.get("text") or t.get("label")) for t in targets]
