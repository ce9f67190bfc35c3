"""One client session's view of one or many workers.

A single-worker session and a follow session are the same thing here: a feed hands the mux
workers as they become available, and the mux shows them to the client as one debuggee. Ids
that are only unique per worker (threads, frames, variables, sources) are remapped to
session-wide ids; source paths are mapped to the client's files; breakpoints the client sets
reach every worker, present and future, through the books of :mod:`..upstream.books`.
Which worker a request is for is found by :mod:`.routing`; the threads shown and continued
are :mod:`.threads`; a worker's paths and unopenable files are :mod:`.worker_files`.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Callable
from typing import Any

from raydap.adapter.errors import Kind, UpstreamError, WorkerError
from raydap.adapter.resume import Configuration, Resume
from raydap.adapter.sessions.breakpoints import SessionBreakpoints
from raydap.adapter.sessions.paths import PathMapper
from raydap.adapter.sessions.routing import RoutingError, route
from raydap.adapter.sessions.threads import continue_all, running_threads, thread_list
from raydap.adapter.sessions.translate import Translation
from raydap.adapter.sessions.worker_files import learn_paths, read_unopenable
from raydap.adapter.sessions.workers import Worker, WorkerFeed
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
        await learn_paths(self._ids.paths, worker)
        if self._closed:
            return
        self._configured[worker.key] = worker
        running = await running_threads(worker, self._all_threads)
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
        for thread_id in dict.fromkeys([*stopped, *running]):
            if isinstance(thread_id, int):  # clients learn of threads without asking
                started = {"reason": "started", "threadId": thread_id}
                self._send(event("thread", self._to_client(worker, started)))
        for point, why in list(worker.upstream.news.points_off.items()):
            self.breakpoints.point_off(worker, {"point": point, "reason": why})
        self.breakpoints.announce()
        for stop in stops:
            self.upstream_event(worker.upstream, stop)

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
            return response_to(request, {"continued": await continue_all(self.workers.values())})
        if command in BOOK_COMMANDS:
            try:
                return await self.breakpoints.set(request, list(self._configured.values()))
            except WorkerError as exc:  # no worker can take it: the request is wrong
                raise RoutingError(str(exc), exc.kind) from None
        if command_info(command).route is Route.BROADCAST:
            return await self._broadcast(request)
        if command == "threads":
            threads = await thread_list(list(self.workers.values()), self._ids, self._all_threads)
            return response_to(request, {"threads": threads})
        reference = request.args.get("sourceReference")
        if command == "source" and self._ids.unopenable(reference) is not None:
            return await read_unopenable(request, self.workers, self._ids, self._audit)
        worker = route(request, self.workers, self._ids)
        return await self._forward(worker, request, for_client=True)

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

    # -- id and path translation ------------------------------------------------------------

    def _to_worker(self, worker: Worker, arguments: Any) -> Any:
        return self._ids.to_worker(worker.key, arguments)

    def _to_client(self, worker: Worker, body: dict[str, Any]) -> dict[str, Any]:
        if isinstance(body.get("hitBreakpointIds"), list):
            body["hitBreakpointIds"] = self.breakpoints.hit_ids(worker, body["hitBreakpointIds"])
        return self._ids.to_client(worker.key, body)

    def _say(self, text: str) -> None:
        self._send(event("output", {"category": "console", "output": text + "\n"}))
