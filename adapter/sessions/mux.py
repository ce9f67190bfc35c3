"""One client session's view of one or many workers.

A single-worker session and a follow session are the same thing here: a feed hands the mux
workers as they become available, and the mux shows them to the client as one debuggee. Ids
that are only unique per worker (threads, frames, variables, sources) are remapped to
session-wide ids; source paths are mapped to the client's files; breakpoints the client sets
reach every worker, present and future, through the books of :mod:`..upstream.books`.
"""

from __future__ import annotations

import ast
import asyncio
import copy
import logging
from collections.abc import Callable
from typing import Any

from raydap.adapter.errors import Kind, UpstreamError, WorkerError
from raydap.adapter.resume import Configuration, Resume
from raydap.adapter.sessions.breakpoints import SessionBreakpoints
from raydap.adapter.sessions.paths import PathMapper
from raydap.adapter.sessions.translate import Translation
from raydap.adapter.sessions.workers import Worker, WorkerFeed
from raydap.adapter.upstream import in_worker
from raydap.adapter.upstream.books import (
    BOOK_COMMANDS,
    SessionBook,
)
from raydap.adapter.upstream.connection import Upstream
from raydap.live.redact import DEFAULT as DEFAULT_REDACTOR
from raydap.live.redact import REDACTED, Redactor
from raydap.protocol import (
    CONTINUE_ALL,
    Event,
    Request,
    Response,
    Route,
    event,
    response_to,
)
from raydap.protocol import command as command_info
from raydap.protocol.extension import CAPTURE_POINT_OFF

log = logging.getLogger(__name__)


class RoutingError(WorkerError):
    """A request the mux cannot send to any worker; its message goes to the client."""

    default_kind = Kind.INVALID


def _client_id(arguments: dict[str, Any], name: str) -> int:
    value = arguments.get(name)
    if not isinstance(value, int) or isinstance(value, bool):
        raise RoutingError(f"{name} must be an integer, not {value!r}")
    return value


class WorkerMux:
    def __init__(
        self,
        feed: WorkerFeed,
        send: Callable[[Request | Response | Event], None],
        paths: PathMapper,
        *,
        all_threads: bool = False,
        child_sessions: bool = False,
        child_configuration: dict[str, Any] | None = None,
        audit: Callable[[str, str, dict[str, Any]], None] | None = None,
        debugs: bool = True,
        redactor: Redactor = DEFAULT_REDACTOR,
    ) -> None:
        """``debugs``: the session may debug (a debug token's); a view token's only looks,
        so its workers do not count as debugged (:attr:`Upstream.debugged`), and the values
        it is shown pass ``redactor`` (a debug token can run code: it sees them as they are)."""
        self.feed = feed
        self.debugs = debugs
        self._redactor = redactor
        self.workers: dict[str, Worker] = {}
        self._by_upstream: dict[Upstream, Worker] = {}  # every event finds its worker in O(1)
        self._send = send
        self._ids = Translation(paths)
        self._all_threads = all_threads
        self._child_sessions = child_sessions
        self._child_configuration = child_configuration or {}
        self._audit = audit or (lambda command, worker, arguments: None)
        #: This session's breakpoints, given to each of its workers.
        self.breakpoints = SessionBreakpoints(self._ids.paths, send, self._audit)
        #: Other configuration (exception filters...), replayed to each worker that joins.
        self._configuration: dict[tuple[str, str], Request] = {}
        #: The workers configuration reaches: those shown, and those joining (from the moment
        #: their paths are known, so that nothing set meanwhile misses them).
        self._configured: dict[str, Worker] = {}
        self._joining: set[asyncio.Task[None]] = set()
        self._closed = False

    @property
    def book(self) -> SessionBook:
        """This session's breakpoints under its own ids."""
        return self.breakpoints.book

    # -- going on in another bridge process (:mod:`.resume`) --------------------------------

    def resume_state(self) -> Resume:
        """What the client needs to attach to the bridge that replaces this one and find its
        ids and breakpoints as they are."""
        lists = self.breakpoints.export()
        configuration = [
            Configuration(command=request.command, arguments=request.args)
            for request in self._configuration.values()
        ]
        return Resume(ids=self._ids.export(), breakpoints=lists, configuration=configuration)

    def restore(self, resume: Resume) -> None:
        """Take up where the client's session in the replaced bridge stood: its ids, and its
        breakpoints and configuration, given to each worker as it joins (before :meth:`start`;
        the caller checked that the client may set them)."""
        self._ids.seed(resume.ids)
        self.breakpoints.restore(resume.breakpoints)
        for configured in resume.configuration:
            request = Request(command=configured.command, arguments=configured.arguments)
            source = request.args.get("source") or {}
            self._configuration[(request.command, str(source.get("path", "")))] = request

    # -- workers coming and going -----------------------------------------------------------

    def start(self) -> None:
        self.feed.start(self._on_join, self._on_end)

    def _on_end(self, why: str) -> None:
        """The feed can offer no more workers (a followed job has ended)."""
        if not self._closed:
            self._say(f"raydap: {why}")
            self._send(event("terminated"))

    def close(self) -> None:
        self._closed = True
        self.feed.stop()
        for task in self._joining:
            task.cancel()
        for worker in self.workers.values():
            worker.upstream.audience.remove(self)
        for worker in self._configured.values():
            self.breakpoints.take_back(worker, resend=False)
        self.workers.clear()
        self._configured.clear()
        self._by_upstream.clear()

    def take_back_breakpoints(self) -> None:
        """The client disconnected: take the breakpoints it set out of the live workers, which
        run on; other sessions' breakpoints stay. (Paused workers keep theirs until their
        lists next change: their next stop is theirs to debug.)"""
        for worker in self._configured.values():
            self.breakpoints.take_back(worker, resend=worker.live)

    def _on_join(self, worker: Worker) -> None:
        if self._closed or worker.key in self.workers:
            return
        if self._child_sessions:
            configuration = dict(self._child_configuration, breakpoint=worker.key)
            configuration["name"] = worker.label
            self._send(
                Request(
                    command="startDebugging",
                    arguments={"request": "attach", "configuration": configuration},
                )
            )
            return
        task = asyncio.create_task(self._join(worker))
        self._joining.add(task)
        task.add_done_callback(self._joining.discard)

    async def _join(self, worker: Worker) -> None:
        """Give the worker this session's breakpoints, then show its stops.

        The worker receives configuration from the moment its paths are known, so a
        ``setBreakpoints`` sent while it joins reaches it too. The stops are replayed after
        the awaits and in the same step as subscribing, so a stop that happens meanwhile is
        shown exactly once."""
        await self._learn_paths(worker)
        if self._closed:
            return
        self._configured[worker.key] = worker
        running_threads = await self._running_threads(worker)
        for request in list(self._configuration.values()):
            try:
                await self._forward(worker, request)
            except (UpstreamError, RoutingError) as exc:
                log.info("%s: could not apply %s: %s", worker.label, request.command, exc)
        await self.breakpoints.give_all(worker)
        if self._closed or worker.upstream.state.value == "closed":
            self._configured.pop(worker.key, None)
            return
        self.workers[worker.key] = worker
        self._by_upstream[worker.upstream] = worker
        worker.upstream.audience.add(self)
        if self.feed.follows:
            self._say(f"raydap: following {worker.label} ({worker.key})")
        elif worker.upstream.process_event is not None:
            self.upstream_event(worker.upstream, worker.upstream.process_event)
        stops = list(worker.upstream.stops.values())
        stopped: list[object] = [(stop.body or {}).get("threadId") for stop in stops]
        for thread_id in dict.fromkeys([*stopped, *running_threads]):
            if isinstance(thread_id, int):  # clients learn of threads without asking
                started = {"reason": "started", "threadId": thread_id}
                self._send(event("thread", self._to_client(worker, started)))
        for point, why in list(worker.upstream.news.points_off.items()):
            self.breakpoints.point_off(worker, {"point": point, "reason": why})
        self.breakpoints.announce()
        for stop in stops:
            self.upstream_event(worker.upstream, stop)

    async def _running_threads(self, worker: Worker) -> list[int]:
        """The threads of a worker that joins running (a live one), to announce: its main
        thread, or all of them for a session that shows all threads."""
        if worker.upstream.stops:
            return []
        try:
            answer = await worker.upstream.request("threads")
        except UpstreamError:
            return []
        threads = (answer.body or {}).get("threads") or [] if answer.success else []
        return [
            t["id"] for t in threads
            if isinstance(t.get("id"), int) and (self._all_threads or t.get("name") == "MainThread")
        ]  # fmt: skip

    async def _learn_paths(self, worker: Worker) -> None:
        """Learn the worker's package directory (from the directory a live worker reports,
        or by reading the stack once) before breakpoints are mapped to it."""
        if not self._ids.paths.active:
            return
        if worker.working_dir:
            self._ids.paths.to_client(worker.key, worker.working_dir)
        if not worker.upstream.stops:
            return
        try:
            _, frames = await worker.upstream.stack(levels=50)
        except UpstreamError:
            return
        for frame in frames:
            path = (frame.get("source") or {}).get("path")
            if isinstance(path, str):
                self._ids.paths.to_client(worker.key, path)

    def upstream_event(self, upstream: Upstream, message: Event) -> None:
        worker = self._by_upstream.get(upstream)
        if worker is None:
            return
        body = message.body if isinstance(message.body, dict) else None
        name = message.event
        if name == "continued":
            self._ids.resumed(worker.key)
        if name in ("process", "exited") and self.feed.follows:
            return
        if name == "breakpoint":
            self.breakpoints.changed(worker, body)
            return
        if name == CAPTURE_POINT_OFF:
            self.breakpoints.point_off(worker, body or {})
            return
        if body is not None:
            # The upstream hands one event to every session: rewrite a copy of our own.
            body = self._to_client(worker, copy.deepcopy(body))
            if name == "stopped":
                body["allThreadsStopped"] = False
                body.setdefault("description", f"Paused in {worker.label}")
            elif name == "continued":
                body["allThreadsContinued"] = False
            elif name == "process":  # debugpy names Ray's default_worker.py, as if local
                body.update(name=worker.label, isLocalProcess=False, worker=worker.facts())
        forwarded = event(name, body)
        self._send(forwarded)

    def upstream_closed(self, upstream: Upstream, reason: str) -> None:
        worker = self._by_upstream.pop(upstream, None)
        if worker is None:
            return
        del self.workers[worker.key]
        self._configured.pop(worker.key, None)
        for thread_id in self._ids.forget(worker.key):
            self._send(event("thread", {"reason": "exited", "threadId": thread_id}))
        self.breakpoints.forget_worker(worker.key)
        self._say(f"{worker.label}: {reason}")
        self.breakpoints.announce()
        if not self.feed.follows:
            self._send(event("terminated"))

    # -- requests ---------------------------------------------------------------------------

    async def handle(self, request: Request) -> Response:
        """Answer a client request by asking the worker(s) it concerns; raises RoutingError
        or UpstreamError with what to tell the client if it cannot."""
        command = request.command
        if command == CONTINUE_ALL:
            for key in self.workers:
                self._audit("continue", key, {})
            return response_to(request, {"continued": await self._continue_all()})
        if command in BOOK_COMMANDS:
            try:
                return await self.breakpoints.set(request, list(self._configured.values()))
            except WorkerError as exc:  # no worker can take it: the request is wrong
                raise RoutingError(str(exc), exc.kind) from None
        if command_info(command).route is Route.BROADCAST:
            return await self._broadcast(request)
        if command == "threads":
            return response_to(request, {"threads": await self._all_thread_list()})
        reference = request.args.get("sourceReference")
        if command == "source" and self._ids.unopenable(reference) is not None:
            return await self._unopenable_source(request)
        worker = self._route(request)
        return await self._forward(worker, request, for_client=True)

    def _route(self, request: Request) -> Worker:
        command = request.command
        route = command_info(command).route
        ids = self._ids.ids_for(route)
        mapped: tuple[str, int] | None = None
        if ids is not None and request.args.get(route.value) not in (None, 0):
            mapped = ids.to_worker(_client_id(request.args, route.value))
        elif len(self.workers) == 1:
            return next(iter(self.workers.values()))
        else:
            raise RoutingError(
                f"{command!r} does not say which worker it is for; select a stack frame of a "
                "paused worker first"
                if self.workers
                else "no paused worker in this session yet"
            )
        if mapped is None or mapped[0] not in self.workers:
            raise RoutingError(
                f"{command!r} names an id of a worker that has resumed or left", Kind.NOT_FOUND
            )
        return self.workers[mapped[0]]

    async def _forward(
        self, worker: Worker, request: Request, *, for_client: bool = False
    ) -> Response:
        arguments = self._to_worker(worker, request.arguments)
        if for_client and not command_info(request.command).read_only:
            self._audit(request.command, worker.key, request.args)
        # A response is this request's own (the cache hands out private copies), so it is
        # rewritten without copying again.
        response = await worker.upstream.request(request.command, arguments)
        if for_client and isinstance(response.body, dict):
            body = self._to_client(worker, dict(response.body))
            if "allThreadsContinued" in body and self.feed.follows:
                body["allThreadsContinued"] = False  # the other workers stay stopped
            if not self.debugs:
                self._redact(request, body)
            response = response.model_copy(update={"body": body})
        return response

    def _redact(self, request: Request, body: dict[str, Any]) -> None:
        """What a session that only looks is not shown: secrets among the values (a view
        token's ``evaluate`` is refused, but a hover may be let through by a later table)."""
        if isinstance(body.get("variables"), list):
            body["variables"] = self._redactor.variables(body["variables"])
        expression = str(request.args.get("expression", ""))
        if "result" in body and self._redactor.hides(expression, str(body["result"])):
            body.update(result=REDACTED, variablesReference=0)

    async def _broadcast(self, request: Request) -> Response:
        """Configuration reaches every worker now, and each one that joins later."""
        source = request.args.get("source") or {}
        self._configuration[(request.command, str(source.get("path", "")))] = request
        workers = list(self._configured.values())
        if not workers:
            return response_to(request)
        answers = await asyncio.gather(
            *(self._forward(w, request, for_client=True) for w in workers), return_exceptions=True
        )
        for answer in answers:
            if isinstance(answer, Response):
                return answer
        raise RoutingError(f"no worker answered {request.command!r}: {answers[0]}", Kind.REFUSED)

    async def _all_thread_list(self) -> list[dict[str, Any]]:
        workers = list(self.workers.values())
        answers = await asyncio.gather(
            *(w.upstream.request("threads") for w in workers), return_exceptions=True
        )
        if workers and not any(isinstance(a, Response) and a.success for a in answers):
            raise RoutingError(
                str(answers[0].message if isinstance(answers[0], Response) else answers[0]),
                Kind.REFUSED,
            )
        threads: list[dict[str, Any]] = []
        for worker, answer in zip(workers, answers, strict=True):
            if not isinstance(answer, Response) or not answer.success:
                continue
            stopped = set(worker.upstream.stops)
            for thread in (answer.body or {}).get("threads", []):
                wanted = thread["id"] in stopped or thread.get("name") == "MainThread"
                if self._all_threads or wanted:
                    threads.append(
                        {
                            "id": self._ids.threads.to_client(worker.key, thread["id"]),
                            "name": f"{worker.label}: {thread.get('name', '')}",
                            "worker": worker.facts(),
                        }
                    )
        return threads

    async def _continue_all(self) -> list[str]:
        async def resume(worker: Worker) -> str | None:
            stop = worker.upstream.stops.top()
            if stop is None:
                return None
            thread_id = (stop.body or {}).get("threadId", 0)
            answer = await worker.upstream.request("continue", {"threadId": thread_id})
            return worker.key if answer.success else None

        done = await asyncio.gather(*(resume(w) for w in list(self.workers.values())))
        return [key for key in done if key]

    async def _unopenable_source(self, request: Request) -> Response:
        """The text of a worker file the client cannot open, read through the worker itself
        (debugpy serves no file by path, and the worker may be on another node)."""
        found = self._ids.unopenable(request.args["sourceReference"])
        assert found is not None  # routed here because it is one
        key, path = found
        # Read-only (a view token may), but it runs bridge-written code in the worker: audited.
        self._audit("source", key, {"path": path})
        worker = self.workers.get(key)
        frame = next((c for c in self._ids.frames.ids_of(key)), None) if worker else None
        if worker is None or frame is None:
            raise RoutingError(
                f"{path} can be read only while its worker is paused", Kind.NOT_PAUSED
            )
        worker_frame = self._ids.frames.to_worker(frame)[1]  # type: ignore[index]
        answer = await worker.upstream.request(
            "evaluate",
            {"expression": in_worker.read_file(path), "frameId": worker_frame,
             "context": "clipboard"},
        )  # fmt: skip
        if not answer.success:
            raise RoutingError(
                f"cannot read {path} in {worker.label}: {answer.message}", Kind.REFUSED
            )
        try:
            text = ast.literal_eval(str((answer.body or {}).get("result", "")))
        except (ValueError, SyntaxError):
            raise RoutingError(f"cannot read {path} in {worker.label}", Kind.REFUSED) from None
        content = "# file too large to show" if text is None else str(text)
        return response_to(request, {"content": content, "mimeType": "text/x-python"})

    # -- id and path translation ------------------------------------------------------------

    def _to_worker(self, worker: Worker, arguments: Any) -> Any:
        return self._ids.to_worker(worker.key, arguments)

    def _to_client(self, worker: Worker, body: dict[str, Any]) -> dict[str, Any]:
        if isinstance(body.get("hitBreakpointIds"), list):
            body["hitBreakpointIds"] = self.breakpoints.hit_ids(worker, body["hitBreakpointIds"])
        return self._ids.to_client(worker.key, body)

    def _say(self, text: str) -> None:
        self._send(event("output", {"category": "console", "output": text + "\n"}))
