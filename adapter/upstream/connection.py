"""The bridge's one DAP connection to a worker's debugpy.

debugpy accepts one client at a time, so the bridge is that client and every editor talks to
the bridge. This module owns that connection: the attach handshake, matching responses to
requests, and the worker's debug state (which threads are stopped, and why) that late-joining
clients are replayed. What to do with it (hold, detach, list) is the bridge's policy.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from raydap.adapter.channel import Channel
from raydap.adapter.errors import Kind, UpstreamClosed, UpstreamError
from raydap.adapter.upstream import attach, handover
from raydap.adapter.upstream.asking import Asking, Observe
from raydap.adapter.upstream.audience import Audience
from raydap.adapter.upstream.breakpoints import Gate, WorkerBreakpoints
from raydap.adapter.upstream.handover import Carried
from raydap.adapter.upstream.life import Happening, Life, State, after
from raydap.adapter.upstream.news import WorkerNews
from raydap.adapter.upstream.quirks import PRIVATE_EVENTS, mend_event
from raydap.adapter.upstream.reading import Reader
from raydap.adapter.upstream.settling import OutOfHook
from raydap.adapter.upstream.stops import Stops
from raydap.protocol import Event, Request, Response
from raydap.protocol import command as command_info

log = logging.getLogger(__name__)


class Upstream:
    """One worker's debugpy, held open by the bridge."""

    def __init__(
        self,
        channel: Channel,
        *,
        name: str,
        request_timeout: float = 30.0,
        on_change: Callable[[Upstream], None] | None = None,
        observe: Observe | None = None,
        child_pid: int | None = None,
    ) -> None:
        """``observe(command, seconds, ok)`` is told of every request that reaches the worker
        (not of answers from the cache). ``child_pid``: this connection is to a child process
        of a worker, through the worker's debugpy adapter (``debugpyAttach``)."""
        self.channel = channel
        self._on_change = on_change or (lambda upstream: None)
        self.name = name
        self.child_pid = child_pid
        self.capabilities: dict[str, Any] = {}
        #: What may be done with the connection (:mod:`.life`).
        self.life = Life.CONNECTING
        #: The ``stopped`` event in force for each stopped thread, in the order they stopped.
        self.stops = Stops()
        self.process_event: Event | None = None
        #: The client sessions told of it (:mod:`.audience`).
        self.audience: Audience[Upstream] = Audience(self, lambda: self._on_change(self))
        self.clients = self.audience.clients
        self.asking = Asking(
            channel, self, timeout=request_timeout, observe=observe, on_answer=self._on_answer
        )
        #: Every session's breakpoints in this worker (it is given their union).
        self.breakpoints = WorkerBreakpoints(self.asking.answered, gate=self.before_stopping)
        #: Awaited before anything that can stop this worker is sent (a list with a breakpoint
        #: that stops, a ``pause``), whatever door asked: the bridge's collective gate, which
        #: keeps a stop from getting the worker's peers killed (``adapter/`` cannot import it).
        self.gate: Gate | None = None
        self._waits = attach.Waits()
        #: Reads the worker from :meth:`start`, stopped when lent (:mod:`.reading`).
        self._reader = Reader(name, lambda: self.asking.read_loop(self._on_event), self._ended)
        self._spawn = self._reader.spawn
        #: Why it closed, for clients and records; and why a detach will close it.
        self.close_reason = ""
        self._detach_reason = ""
        #: Told of every breakpoint configuration the worker accepted (``setBreakpoints`` and
        #: the like, as sent to it), so the bridge can keep what a live worker has.
        self.on_configured: Callable[[str, dict[str, Any]], None] | None = None
        #: Whether this worker's ``breakpoint()`` stops inside Ray's hook (Python 3.12+,
        #: :mod:`.ray_hook`): None until its first such stop shows it, or a live worker's mark.
        self.stops_in_ray_hook: bool | None = None
        #: What the worker tells beyond debugging, and the bridge's listeners to it.
        self.news = WorkerNews(name)
        #: Stops being moved out of Ray's hook (:mod:`.settling`).
        self._out_of_hook = OutOfHook(
            self, self.asking.exchange, self._show_stop, self._spawn, self._waits.first_stop
        )

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
        self._reader.start()

    # -- handed to another bridge process (:mod:`.handover`) -----------------------

    @classmethod
    def adopt(cls, channel: Channel, carried: Carried, *, name: str, **options: Any) -> Upstream:
        """A connection another bridge process held (:func:`.handover.lend`), attached and standing
        where it stood there. Its owner wires it up, then calls :meth:`start`. Lent, taken
        back and abandoned by :mod:`.handover`'s functions."""
        made = cls(channel, name=name, child_pid=carried.child_pid, **options)
        handover.stand_as_carried(made, carried)
        return made

    @property
    def reading(self) -> bool:
        """Whether it reads the worker (started, and not lent)."""
        return self._reader.reading

    async def stop_reading(self) -> None:
        """Stop reading, between two messages (a hand-over lends the socket)."""
        await self._reader.stop()

    def stand(self) -> None:
        """The handshake's waits are over: attached, standing where it stopped (a connection
        another bridge process held, :meth:`adopt`)."""
        self.happen(Happening.ATTACHED)
        self._waits.over()

    @property
    def quiet(self) -> bool:
        """Whether nothing is under way with the worker: no request waits for its answer, no
        stop is being settled or shown, no breakpoints are being set."""
        return not (
            self.asking.waiting
            or self._reader.busy
            or self._out_of_hook.busy
            or self.asking.configuring
        )

    async def handshake(
        self,
        *,
        timeout: float = 10.0,
        expect_stop: bool = True,
        configure: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """Attach as debugpy's client (:mod:`.attach`) and wait until the worker reports
        where it stopped (unless ``expect_stop`` is false: a live worker runs on, attached).
        ``configure`` sends breakpoints before the worker is let run: a child process waits
        for them, so one set on its first lines stops it."""
        if not self._reader.started:
            self.start()
        self.capabilities = await attach.handshake(
            self, self._waits, timeout=timeout, expect_stop=expect_stop, configure=configure
        )
        self.happen(Happening.ATTACHED)

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

    def announce(self, text: str, category: str = "console") -> None:
        """Tell every client something about this worker (an ``output`` event)."""
        self.audience.say(text, category)

    async def close(self, reason: str) -> None:
        await self.channel.close()
        self._closed(reason)
        self._reader.cancel()

    # -- requests (:mod:`.asking`) ----------------------------------------------------------

    async def before_stopping(self) -> Sequence[str]:
        """The collective gate's verdict, awaited before anything that can stop the worker."""
        return await self.gate() if self.gate is not None else ()

    def configured(self, command: str, arguments: dict[str, Any]) -> None:
        if self.on_configured is not None:
            self.on_configured(command, arguments)

    async def request(
        self, command: str, arguments: Any = None, *, timeout: float | None = None
    ) -> Response:
        """Send a request and return debugpy's response (successful or not), from the stop
        cache if asked before during this stop. Raises :class:`UpstreamClosed` if the worker
        goes away and :class:`UpstreamError` if it does not answer in time."""
        return await self.asking.request(command, arguments, timeout=timeout)

    # -- events -----------------------------------------------------------------------------

    async def _ended(self, why: str) -> None:
        """Reading ended: closed, unless lent (it stays open, for the process it goes to)."""
        if self.life is not Life.LENT:
            try:
                await self.channel.close()  # a channel's close swallows its socket's errors
            finally:
                self._closed(self._detach_reason or why or self.close_reason or "closed")

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
            self._waits.initialized.set()
        elif name == "stopped":
            self.asking.cache.clear()
            if self._out_of_hook.takes(message):
                self._spawn(self._out_of_hook.settle(message))
            elif self.asking.configuring:
                self._spawn(self._show_once_configured(message))
            else:
                self._show_stop(message)
            return
        elif name == "invalidated":
            self.asking.cache.clear()
        elif name == "thread":
            self.asking.cache.clear()
            exited = body.get("threadId") if body.get("reason") == "exited" else None
            if self.stops.exited(exited):
                self._on_change(self)
        elif name == "continued":
            self._resumed(body.get("threadId"), body)
            return  # _resumed forwards a continued event of its own
        elif name == "process":
            self.process_event = message
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
        else:
            said = self.news.take(name, body)
            if said is not None:
                self.audience.tell(said)
        if name in PRIVATE_EVENTS or (name == "output" and body.get("category") == "telemetry"):
            return
        self.audience.tell(message)

    async def _show_once_configured(self, message: Event) -> None:
        """A stop that came while breakpoints were being set, shown once their ids are known
        (so clients are told which of theirs was hit)."""
        await self.asking.configuration_answered()
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
        self._waits.first_stop.set()
        if isinstance(thread_id, int):
            self._spawn(self.asking.prefetch(thread_id))
        self.audience.tell(message)
        self._on_change(self)

    def _resumed(self, thread_id: object, body: object) -> None:
        """Forget the stops that ended, and tell every client once (debugpy tells only the
        one whose request resumed the worker, in its response, and sometimes sends a
        ``continued`` event of its own as well)."""
        continued = self.stops.resumed(thread_id, body)
        if continued is None:
            return
        self.asking.cache.clear()
        self.audience.tell(continued)
        self._on_change(self)

    def happen(self, happening: Happening) -> None:
        """Move to the phase :mod:`.life`'s table gives (LifeError if none)."""
        self.life = after(self.life, happening)

    def _closed(self, reason: str) -> None:
        if self.life is Life.CLOSED:
            return
        self.happen(Happening.CLOSED)
        self.close_reason = reason
        self.stops.clear()
        self.asking.fail_pending(UpstreamClosed(f"worker {self.name} is gone ({reason})"))
        self.audience.closed(reason)
        self._on_change(self)

    @property
    def debugged(self) -> bool:
        """Whether a session that may debug it is attached (:attr:`.Audience.debugged`)."""
        return self.audience.debugged

    async def stack(self, levels: int = 0) -> tuple[int, list[dict[str, Any]]]:
        """The most recently stopped thread and its top ``levels`` frames (0: all of them);
        raises UpstreamError if the worker is not stopped or reports no stack."""
        stop = self.stops.top()
        if stop is None:
            raise UpstreamError(f"{self.name} is not stopped", Kind.NOT_PAUSED)
        thread_id = int((stop.body or {}).get("threadId", 0))
        return thread_id, await self.asking.frames(thread_id, levels)
