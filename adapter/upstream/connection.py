"""The bridge's one DAP connection to a worker's debugpy.

debugpy accepts one client at a time, so the bridge is that client and every editor talks to
the bridge. This module owns that connection: the attach handshake, matching responses to
requests, and the worker's debug state (which threads are stopped, and why) that late-joining
clients are replayed. What to do with it (hold, detach, list) is the bridge's policy.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from raydap.adapter.channel import Channel
from raydap.adapter.errors import Kind, UpstreamClosed, UpstreamError
from raydap.adapter.requests import RequestEngine
from raydap.adapter.upstream import handover
from raydap.adapter.upstream.breakpoints import Gate, WorkerBreakpoints
from raydap.adapter.upstream.cache import Key, StopCache, answer_for
from raydap.adapter.upstream.handover import Carried
from raydap.adapter.upstream.life import Happening, Life, State, after
from raydap.adapter.upstream.quirks import PRIVATE_EVENTS, mend_event, mend_response, refusal
from raydap.adapter.upstream.settling import OutOfHook
from raydap.adapter.upstream.stops import Stops
from raydap.protocol import Event, ProtocolError, Request, Response, Route, event
from raydap.protocol import command as command_info
from raydap.protocol.extension import CAPTURE, CAPTURE_POINT_OFF, PROCESS_GROUPS

log = logging.getLogger(__name__)
#: A capture point's id (:mod:`..captures.points`), and how many points a worker may turn off.
POINT_ID = re.compile(r"cp-[0-9a-f]{10}")
MAX_POINTS_OFF = 256
#: Whether a worker's children are debugged is the worker's choice (``debugpy.configure``
#: before it listens: ``RAYDAP_CHILDREN=0``); the attach arguments do not change it.
_ATTACH = {"justMyCode": False, "showReturnValue": True}


class Client(Protocol):
    """An attached client session: it receives the worker's events."""

    #: Whether the session may debug; one that only looks holds nothing (:attr:`debugged`).
    debugs: bool

    def upstream_event(self, upstream: Upstream, message: Event) -> None: ...

    def upstream_closed(self, upstream: Upstream, reason: str) -> None: ...


class Upstream:
    """One worker's debugpy, held open by the bridge."""

    def __init__(
        self,
        channel: Channel,
        *,
        name: str,
        request_timeout: float = 30.0,
        on_change: Callable[[Upstream], None] | None = None,
        observe: Callable[[str, float, bool], None] | None = None,
        child_pid: int | None = None,
    ) -> None:
        """``observe(command, seconds, ok)`` is told of every request that reaches the worker
        (not of answers from the cache). ``child_pid``: this connection is to a child process
        of a worker, through the worker's debugpy adapter (``debugpyAttach``)."""
        self.channel = channel
        self.name = name
        self.child_pid = child_pid
        self.request_timeout = request_timeout
        self.capabilities: dict[str, Any] = {}
        #: What may be done with the connection (:mod:`.life`).
        self.life = Life.CONNECTING
        #: The ``stopped`` event in force for each stopped thread, in the order they stopped.
        self.stops = Stops()
        self.process_event: Event | None = None
        self.clients: set[Client] = set()
        self.cache = StopCache()
        #: Every session's breakpoints in this worker (it is given their union).
        self.breakpoints = WorkerBreakpoints(self._ask_answered, gate=self._before_stopping)
        #: Awaited before anything that can stop this worker is sent (a list with a breakpoint
        #: that stops, a ``pause``), whatever door asked: the bridge's collective gate, which
        #: keeps a stop from getting the worker's peers killed (``adapter/`` cannot import it).
        self.gate: Gate | None = None
        self._on_change = on_change or (lambda upstream: None)
        self._observe = observe
        self._requests = RequestEngine(channel, on_answer=self._on_answer)
        # Beside the life table, and not phases of it: what a coroutine waits for, and what
        # clients are told. The phase is ``life``; whether it stands stopped is ``stops``.
        #: The handshake waits for debugpy's ``initialized``, and for its first stop.
        self._initialized = asyncio.Event()
        self._first_stop = asyncio.Event()
        #: The task reading the worker (None before :meth:`start`; cancelled when lent).
        self._reader: asyncio.Task[None] | None = None
        #: Why it closed, for clients and records; and why a detach will close it.
        self.close_reason = ""
        self._detach_reason = ""
        #: Work under way for it (settling a stop, prefetching): a lent one must have none.
        self._background: set[asyncio.Future[Any]] = set()
        #: Told of every breakpoint configuration the worker accepted (``setBreakpoints`` and
        #: the like, as sent to it), so the bridge can keep what a live worker has.
        self.on_configured: Callable[[str, dict[str, Any]], None] | None = None
        #: Whether this worker's ``breakpoint()`` stops inside Ray's hook (Python 3.12+,
        #: :mod:`.ray_hook`): None until its first such stop shows it, or a live worker's mark.
        self.stops_in_ray_hook: bool | None = None
        #: Told of each child process of the worker that waits for a client (debugpy's
        #: ``debugpyAttach``: the child runs no code of its own until one attaches).
        self.on_child: Callable[[int], None] | None = None
        #: Told of what a ``raydap.live`` worker says of its torch.distributed process groups
        #: as its job makes them (:mod:`raydap.live.collectives`).
        self.on_process_groups: Callable[[object], None] | None = None
        #: Told of each capture a live worker took at a capture point, or of a point it
        #: turned off (:mod:`raydap.live.captures`).
        self.on_capture: Callable[[object], None] | None = None
        #: Capture points this worker turned off, and why: told to each session that joins
        #: later, as its stops are.
        self.points_off: dict[str, str] = {}
        #: Stops being moved out of Ray's hook (:mod:`.settling`).
        self._out_of_hook = OutOfHook(
            self, self._exchange, self._show_stop, self._spawn, self._first_stop
        )
        #: Breakpoint settings sent and not answered yet: a stop at one of them may come
        #: first on the wire, naming an id the bridge learns only from the answer.
        self._configuring = 0
        self._configuration_answered = asyncio.Event()
        self._configuration_answered.set()

    @property
    def state(self) -> State:
        if self.life is Life.CLOSED:
            return State.CLOSED
        if self.stops:
            return State.STOPPED
        return State.CONNECTING if self.life is Life.CONNECTING else State.RUNNING

    # -- life cycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Begin reading from the worker."""
        self._reader = asyncio.create_task(self._read_loop(), name=f"upstream {self.name}")

    # -- handed to another bridge process (:mod:`.handover`) -----------------------

    @classmethod
    def adopt(cls, channel: Channel, carried: Carried, *, name: str, **options: Any) -> Upstream:
        """A connection another bridge process held (:meth:`lend`), attached and standing
        where it stood there. Its owner wires it up, then calls :meth:`start`."""
        made = cls(channel, name=name, child_pid=carried.child_pid, **options)
        handover.stand_as_carried(made, carried)
        return made

    async def lend(self) -> tuple[int, Carried]:
        """Stop reading, between two messages, and give the socket's descriptor and what
        another process needs to go on (:meth:`adopt`); UpstreamError if something is under
        way, or for a connection that cannot be lent."""
        return await handover.lend(self)

    def take_back(self) -> None:
        """The hand-over failed: read again from where :meth:`lend` stopped."""
        handover.take_back(self)

    async def abandon(self, reason: str) -> None:
        """The hand-over succeeded: close this end; the worker sees no disconnect."""
        await handover.abandon(self, reason)

    @property
    def reading(self) -> bool:
        """Whether it reads the worker (started, and not lent)."""
        return self._reader is not None and not self._reader.done()

    async def stop_reading(self) -> None:
        """Stop reading, between two messages (a hand-over lends the socket)."""
        if self._reader is not None:
            self._reader.cancel()
            await asyncio.gather(self._reader, return_exceptions=True)

    def stand(self) -> None:
        """The handshake's waits are over: attached, standing where it stopped (a connection
        another bridge process held, :meth:`adopt`)."""
        self.happen(Happening.ATTACHED)
        self._initialized.set()
        self._first_stop.set()

    @property
    def quiet(self) -> bool:
        """Whether nothing is under way with the worker: no request waits for its answer, no
        stop is being settled or shown, no breakpoints are being set."""
        return not (
            self._requests.waiting
            or self._background
            or self._out_of_hook.busy
            or self._configuring
        )

    async def handshake(
        self,
        *,
        timeout: float = 10.0,
        expect_stop: bool = True,
        configure: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """Attach as debugpy's client and wait until the worker reports where it stopped
        (unless ``expect_stop`` is false: a live worker runs on, attached). ``configure``
        sends breakpoints before the worker is let run: a child process waits for them, so
        one set on its first lines stops it.

        Order matters to debugpy 1.8: it answers ``attach`` only after ``configurationDone``,
        sends ``initialized`` only when the attach arguments are not empty, and reports a
        post-mortem stop only if the ``uncaught`` exception filter was set before
        ``configurationDone``. ``justMyCode`` must be false: Ray stops the worker with
        ``pydevd.settrace`` called from Ray's own (library) frame, and with ``justMyCode`` true
        debugpy never reports that stop. ``showReturnValue`` (VS Code's default) lists a
        function's return value after stepping out of it, for every client of the worker.
        """
        if self._reader is None:
            self.start()
        initialize = await self.request(
            "initialize",
            {
                "clientID": "raydap",
                "clientName": "raydap bridge",
                "adapterID": "python",
                "pathFormat": "path",
                "linesStartAt1": True,
                "columnsStartAt1": True,
                "supportsVariableType": True,
                "supportsStartDebuggingRequest": False,
            },
            timeout=timeout,
        )
        self.capabilities = dict(initialize.body or {})
        arguments: dict[str, Any] = dict(_ATTACH)
        if self.child_pid is not None:
            arguments["subProcessId"] = self.child_pid
        attach = asyncio.ensure_future(self.request("attach", arguments, timeout=timeout))
        try:
            await asyncio.wait_for(self._initialized.wait(), timeout)
            await self.request(
                "setExceptionBreakpoints", {"filters": ["uncaught"]}, timeout=timeout
            )
            if configure is not None:
                await configure()
            await self.request("configurationDone", timeout=timeout)
            await attach
            if expect_stop:
                await asyncio.wait_for(self._first_stop.wait(), timeout)
            self.happen(Happening.ATTACHED)
        except BaseException:
            attach.cancel()
            raise

    async def detach(self, reason: str = "detached") -> None:
        """Disconnect without killing the worker; debugpy then resumes it. ``reason`` is what
        its clients are told."""
        if self.life in (Life.CLOSED, Life.LENT):  # a lent one goes on in the other process
            return
        self.happen(Happening.DETACH)
        self._detach_reason = reason
        with contextlib.suppress(UpstreamError, asyncio.TimeoutError):
            await self.request("disconnect", {"terminateDebuggee": False}, timeout=2.0)
        await self.close(reason)

    def announce(self, text: str) -> None:
        """Tell every client something about this worker (an ``output`` event)."""
        self._broadcast(event("output", {"category": "console", "output": text + "\n"}))

    async def close(self, reason: str) -> None:
        await self.channel.close()
        self._closed(reason)
        if self._reader is not None and self._reader is not asyncio.current_task():
            self._reader.cancel()

    # -- requests ---------------------------------------------------------------------------

    async def _before_stopping(self) -> Sequence[str]:
        return await self.gate() if self.gate is not None else ()

    async def _ask_answered(self, command: str, arguments: dict[str, Any]) -> Response:
        """:meth:`request`, with a worker that cannot be asked as a failed response."""
        try:
            return await self.request(command, arguments)
        except UpstreamError as exc:
            return Response(request_seq=0, success=False, command=command, message=str(exc))

    async def request(
        self, command: str, arguments: Any = None, *, timeout: float | None = None
    ) -> Response:
        """Send a request and return debugpy's response (successful or not).

        Read-only requests of a stopped worker are answered from :class:`StopCache` when the
        same question was asked during this stop. Raises :class:`UpstreamClosed` if the worker
        goes away and :class:`UpstreamError` if it does not answer in time; either way only
        this request fails.
        """
        refused = refusal(command, arguments)
        if refused is not None:
            return mend_response(
                Response(request_seq=0, success=False, command=command, message=refused)
            )
        key = self.cache.key(command, arguments) if self.state is State.STOPPED else None
        if command == "pause":
            await self._before_stopping()
        if key is None:
            configures = command_info(command).route is Route.BROADCAST
            if configures:
                self._configuring += 1
                self._configuration_answered.clear()
            try:
                response = await self._exchange(command, arguments, timeout)
            finally:
                if configures:
                    self._configuring -= 1
                    if not self._configuring:
                        self._configuration_answered.set()
            if response.success:
                self.cache.after_request(command, arguments)
                if configures and self.on_configured is not None:
                    self.on_configured(command, dict(arguments or {}))
            return response
        answer = self.cache.get(key)
        if answer is None:
            upstream_arguments = self.cache.upstream_arguments(command, arguments)
            answer = asyncio.ensure_future(self._exchange(command, upstream_arguments, timeout))
            self.cache.put(key, answer)
            answer.add_done_callback(functools.partial(self._settled, key))
        return answer_for(command, arguments, await asyncio.shield(answer))

    def _settled(self, key: Key, answer: asyncio.Future[Response]) -> None:
        if answer.cancelled() or answer.exception() is not None or not answer.result().success:
            self.cache.discard(key, answer)

    async def _exchange(self, command: str, arguments: Any, timeout: float | None) -> Response:
        """One request and its response, uncached."""
        if self.state is State.CLOSED:
            raise UpstreamClosed(f"worker {self.name} is gone ({self.close_reason})")
        if self.life is Life.LENT:
            raise UpstreamError(
                f"{self.name} is being handed to a new bridge: try again", Kind.UNAVAILABLE
            )
        started = time.perf_counter()
        ok = False
        try:
            response = await self._requests.request(
                command, arguments, timeout=timeout or self.request_timeout
            )
            ok = response.success
        except asyncio.TimeoutError:  # before OSError: TimeoutError is one since 3.11
            waited = timeout or self.request_timeout
            why = f"worker {self.name} did not answer {command!r} within {waited:g} s"
            self._tell_waiting(why)
            raise UpstreamError(why, Kind.TIMED_OUT) from None
        except UpstreamClosed:
            raise
        except (ConnectionError, OSError) as exc:
            raise UpstreamClosed(f"worker {self.name} is gone: {exc!r}") from None
        finally:
            if self._observe is not None:
                self._observe(command, time.perf_counter() - started, ok)
        return mend_response(response)

    # -- events -----------------------------------------------------------------------------

    async def _read_loop(self) -> None:
        reason = "the worker exited (its debugger connection closed)"
        try:
            await self._requests.read_loop(self._on_event)
        except ProtocolError as exc:
            reason = f"worker sent bad DAP: {exc}"
        except (ConnectionError, OSError) as exc:
            reason = f"connection lost: {exc}"
        except asyncio.CancelledError:
            reason = self.close_reason or "closed"
            raise
        finally:
            if self.life is not Life.LENT:  # a lent one stays open, for the process it goes to
                try:
                    await self.channel.close()  # a channel's close swallows its socket's errors
                finally:
                    self._closed(self._detach_reason or reason)

    def _on_answer(self, request: Request, response: Response) -> None:
        # Applied here, in wire order: the worker may stop again right after resuming, and
        # that stopped event may be read before the requester's coroutine runs again.
        if response.success and command_info(request.command).resumes:
            self._resumed(request.args.get("threadId"), response.body)

    def _on_event(self, message: Event) -> None:
        message = mend_event(message)
        name = message.event
        body = message.body if isinstance(message.body, dict) else {}
        if name == "initialized":
            self._initialized.set()
        elif name == "stopped":
            self.cache.clear()
            if self._out_of_hook.takes(message):
                self._spawn(self._out_of_hook.settle(message))
            elif self._configuring:
                self._spawn(self._show_once_configured(message))
            else:
                self._show_stop(message)
            return
        elif name == "invalidated":
            self.cache.clear()
        elif name == "thread":
            self.cache.clear()
            exited = body.get("threadId") if body.get("reason") == "exited" else None
            if self.stops.exited(exited):
                self._on_change(self)
        elif name == "continued":
            self._resumed(body.get("threadId"), body)
            return  # _resumed forwards a continued event of its own
        elif name == "process":
            self.process_event = message
        elif name == "debugpyAttach" and self.on_child is not None:
            child = body.get("subProcessId")
            if isinstance(child, int) and not isinstance(child, bool) and child > 0:
                self.on_child(child)
        elif name == PROCESS_GROUPS and self.on_process_groups is not None:
            self._told(self.on_process_groups, body)
        elif name == CAPTURE:
            if self.on_capture is not None:
                self._told(self.on_capture, body)
            point, why = body.get("point"), body.get("disabled")
            # The sessions owning it say so. The worker's words are data: a point id of the
            # shape the bridge gives, a bounded reason, and a bounded number of points.
            point = point if isinstance(point, str) and POINT_ID.fullmatch(point) else None
            if point is not None and isinstance(why, str) and self._room_for_point_off(point):
                self.points_off[point] = why[:500]
                self._broadcast(event(CAPTURE_POINT_OFF, {"point": point, "reason": why[:500]}))
        elif name == "terminated":
            # debugpy's adapter says so when the worker process dies, but keeps the socket
            # open: the worker is gone all the same. It says so too while it handles the
            # bridge's own ``disconnect``, before it answers: closing then made its answer
            # fail, and a failed handler ends debugpy's adapter (``os._exit(1)`` in its
            # messaging), leaving the worker's next ``breakpoint()`` waiting on a port that
            # refuses. So a detach closes once answered (:meth:`detach`), not here.
            if self.life is not Life.DETACHING:
                self._spawn(self.close("the worker process exited"))
            return
        if name in PRIVATE_EVENTS or (name == "output" and body.get("category") == "telemetry"):
            return
        self._broadcast(message)

    async def _show_once_configured(self, message: Event) -> None:
        """A stop that came while breakpoints were being set, shown once their ids are known
        (so clients are told which of theirs was hit)."""
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._configuration_answered.wait(), self.request_timeout)
        if self.state is not State.CLOSED:
            self._show_stop(message)

    def _show_stop(self, message: Event) -> None:
        """A stop that stands where the user expects: record it and tell every client."""
        body = message.body if isinstance(message.body, dict) else {}
        thread_id = body.get("threadId")
        if self.life is Life.DETACHING:
            log.warning(
                "%s stopped while the bridge was detaching: debugpy resumes it on "
                "disconnect, so this breakpoint() is skipped",
                self.name,
            )
        self.stops.stopped(message)
        self.happen(Happening.ATTACHED)
        self._first_stop.set()
        if isinstance(thread_id, int):
            self._spawn(self._prefetch(thread_id))
        self._broadcast(message)
        self._on_change(self)

    def _resumed(self, thread_id: object, body: object) -> None:
        """Forget the stops that ended, and tell every client once (debugpy tells only the
        one whose request resumed the worker, in its response, and sometimes sends a
        ``continued`` event of its own as well)."""
        continued = self.stops.resumed(thread_id, body)
        if continued is None:
            return
        self.cache.clear()
        self._broadcast(continued)
        self._on_change(self)

    async def _prefetch(self, thread_id: int) -> None:
        """Warm the cache with what every editor asks first when a worker stops: the threads,
        the stack, and the top frame's scopes and locals."""

        async def top_of_stack() -> None:
            trace = await self.request("stackTrace", {"threadId": thread_id})
            frames = (trace.body or {}).get("stackFrames") or []
            if frames and self.state is State.STOPPED:
                scopes = await self.request("scopes", {"frameId": frames[0]["id"]})
                for scope in (scopes.body or {}).get("scopes", [])[:1]:
                    reference = scope.get("variablesReference")
                    if reference:
                        await self.request("variables", {"variablesReference": reference})

        # Failures are not worth reporting: a warm-up that fails just leaves the cache cold.
        await asyncio.gather(self.request("threads"), top_of_stack(), return_exceptions=True)

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.ensure_future(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _told(self, listener: Callable[[object], None], body: object) -> None:
        """What a worker says goes to the bridge's listener; a bug there, or a body it could
        not take, loses that message alone, never the worker's connection."""
        try:
            listener(body)
        except Exception:
            log.exception("%s: a message of the worker could not be taken", self.name)

    def _room_for_point_off(self, point: str) -> bool:
        return point in self.points_off or len(self.points_off) < MAX_POINTS_OFF

    def _tell_waiting(self, why: str) -> None:
        """Every session of the worker hears why it may stop answering: debugpy handles one
        request at a time, so one that runs long (an ``evaluate`` that never returns) holds
        the worker's debugger for everyone until it ends (docs/security.md)."""
        text = (
            f"raydap: {why}; until it does, this worker answers no other request of any "
            "session (a long evaluate holds its debugger)\n"
        )
        self._broadcast(event("output", {"category": "important", "output": text}))

    def _broadcast(self, message: Event) -> None:
        for client in list(self.clients):
            client.upstream_event(self, message)

    def happen(self, happening: Happening) -> None:
        """Move to the phase :mod:`.life`'s table gives (LifeError if none)."""
        self.life = after(self.life, happening)

    def _closed(self, reason: str) -> None:
        if self.life is Life.CLOSED:
            return
        self.happen(Happening.CLOSED)
        self.close_reason = reason
        self.stops.clear()
        self._requests.fail_pending(UpstreamClosed(f"worker {self.name} is gone ({reason})"))
        for client in list(self.clients):
            client.upstream_closed(self, reason)
        self.clients.clear()
        self._on_change(self)

    # -- clients ----------------------------------------------------------------------------

    @property
    def debugged(self) -> bool:
        """Whether a session that may debug it is attached: only such a session keeps a stop
        held or the worker's job counted as debugged; one that only looks changes nothing."""
        return any(client.debugs for client in self.clients)

    def add_client(self, client: Client) -> None:
        self.clients.add(client)
        self._on_change(self)

    def remove_client(self, client: Client) -> None:
        if client in self.clients:
            self.clients.discard(client)
            self._on_change(self)

    async def stack(self, levels: int = 0) -> tuple[int, list[dict[str, Any]]]:
        """The most recently stopped thread and its top ``levels`` frames (0: all of them);
        raises UpstreamError if the worker is not stopped or reports no stack."""
        stop = self.top_stop()
        if stop is None:
            raise UpstreamError(f"{self.name} is not stopped", Kind.NOT_PAUSED)
        thread_id = int((stop.body or {}).get("threadId", 0))
        arguments: dict[str, Any] = {"threadId": thread_id, "startFrame": 0}
        if levels:
            arguments["levels"] = levels
        response = await self.request("stackTrace", arguments)
        frames = (response.body or {}).get("stackFrames") or [] if response.success else []
        if not frames:
            raise UpstreamError(f"{self.name} has no stack: {response.message}", Kind.REFUSED)
        return thread_id, frames

    def top_stop(self) -> Event | None:
        """The most recent stop in force, the one a person wants to see first."""
        return self.stops.top()
