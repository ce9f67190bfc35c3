"""One editor's DAP session with the bridge.

The editor believes it attached to a debugger; in fact the bridge already holds the workers,
so the handshake is answered here and only the debugging itself is relayed (by a
:class:`~adapter.mux.WorkerMux`). What each request may do in each phase is the table of
:mod:`.phases`; this class carries it out. Every request is answered exactly once: an error it
raises, expected or a bug, becomes the one error reply.

At ``configurationDone`` the session starts receiving its workers and is replayed where each
is stopped, so a client that attaches late sees exactly what the first one saw.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from pydantic import ValidationError

from raydap.adapter.captures.mux import CaptureFeed, CaptureMux
from raydap.adapter.channel import Channel
from raydap.adapter.errors import Kind, WorkerError
from raydap.adapter.resume import Resume
from raydap.adapter.sessions.capabilities import bridge_capabilities
from raydap.adapter.sessions.mux import WorkerMux
from raydap.adapter.sessions.paths import PathMapper
from raydap.adapter.sessions.phases import Action, Phase, step
from raydap.adapter.sessions.workers import SingleWorker, WorkerFeed
from raydap.live.redact import DEFAULT as DEFAULT_REDACTOR
from raydap.live.redact import Redactor
from raydap.protocol import (
    Event,
    ProtocolError,
    Request,
    Response,
    error_response,
    event,
    response_to,
)
from raydap.protocol.commands import refusal as command_refusal
from raydap.protocol.extension import REPLACED
from raydap.protocol.schema import argument_problem

log = logging.getLogger(__name__)


class AttachError(WorkerError):
    """An attach the bridge refuses; the message tells the person what to do instead."""

    default_kind = Kind.NOT_FOUND


class Grant(Protocol):
    """What a client was allowed at attach (the bridge's tokens implement it)."""

    @property
    def name(self) -> str: ...

    @property
    def debugs(self) -> bool:
        """Whether its sessions debug (a ``view`` token's only look: they hold no stop and
        raise no collective timeout)."""
        ...

    def allows(self, command: str) -> bool: ...


#: Finds the workers (or the capture) an attach request names (its arguments) for a client
#: with this grant, or raises :class:`AttachError`.
Resolver = Callable[[dict[str, Any], Grant], Awaitable[WorkerFeed | CaptureFeed]]


#: Checks an attach request's credentials (its arguments); returns a grant or raises AttachError.
Authorize = Callable[[dict[str, Any]], Grant]
#: Records what a client did: ``audit(action, client=..., token=..., **details)``.
Audit = Callable[..., None]


class _Nobody:
    """The grant before attach: nothing is allowed until credentials are checked."""

    name = "not attached"
    debugs = False

    def allows(self, command: str) -> bool:
        return False


#: Errors whose message is meant for the client as is.
_TOLD = WorkerError


class ClientSession:
    """Serves one client connection until it disconnects."""

    def __init__(
        self,
        channel: Channel,
        resolve: Resolver,
        *,
        capabilities: Callable[[], dict[str, Any]],
        authorize: Authorize,
        audit: Audit | None = None,
        handshake_timeout: float = 10.0,
        max_queued: int = 10_000,
        redactor: Redactor = DEFAULT_REDACTOR,
    ) -> None:
        self.channel = channel
        self.phase = Phase.NEW
        self.mux: WorkerMux | CaptureMux | None = None
        self.grant: Grant = _Nobody()
        self._resolve = resolve
        self._authorize = authorize
        self._audit_sink = audit
        self._handshake_timeout = handshake_timeout
        self._redactor = redactor
        self._capabilities = capabilities
        self._client_arguments: dict[str, Any] = {}
        self._announced: dict[str, Any] = {}
        self._outbox: asyncio.Queue[Request | Response | Event | None] = asyncio.Queue()
        self._max_queued = max_queued
        self._seq = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._unanswered: set[int] = set()  # requests received and not yet answered

    @property
    def peer(self) -> str:
        return self.channel.peer

    async def run(self) -> None:
        """Serve until the session ends; never raises for anything the client sends."""
        writer = asyncio.create_task(self._write_loop(), name=f"client {self.peer} writer")
        try:
            while self.phase is not Phase.CLOSED:
                handshaking = self.phase in (Phase.NEW, Phase.INITIALIZED)
                try:
                    message = await asyncio.wait_for(
                        self.channel.receive(), self._handshake_timeout if handshaking else None
                    )
                except asyncio.TimeoutError:
                    self._end(
                        f"raydap: closing this connection: it did not attach within "
                        f"{self._handshake_timeout:g} s (send 'initialize', then 'attach')"
                    )
                    break
                except ProtocolError as exc:
                    log.info("client %s sent bad DAP: %s", self.peer, exc)
                    if exc.request_seq is not None:
                        self._fail_seq(exc.request_seq, exc.command or "?", str(exc))
                    break
                if message is None:
                    break
                if isinstance(message, Request):
                    self._unanswered.add(message.seq)
                    await self._answering(message, self._on_request(message))
                # Responses (to startDebugging) and events from a client need no action.
        except (ConnectionError, OSError) as exc:
            log.info("client %s lost: %s", self.peer, exc)
        finally:
            self._leave()
            self._outbox.put_nowait(None)
            with contextlib.suppress(asyncio.TimeoutError, OSError):  # a client that reads no more
                await asyncio.wait_for(writer, 5.0)
            for task in self._tasks:
                task.cancel()
            await self.channel.close()

    # -- requests ---------------------------------------------------------------------------

    async def _on_request(self, request: Request) -> None:
        command = request.command
        move = step(self.phase, command)
        if move.action is Action.REFUSE:
            self._fail(request, move.refusal)
        elif move.action is Action.INITIALIZE:
            self._client_arguments = request.args
            self._announced = self._capabilities()
            self._send(response_to(request, self._announced))
        elif move.action is Action.ATTACH:
            await self._on_attach(request)  # raises if refused: the phase stays
        elif move.action is Action.DISCONNECT:
            self._send(response_to(request))
            if self.mux is not None:
                self._audit("detach")
                self.mux.take_back_breakpoints()
            self._leave()
        elif move.action is Action.CONFIGURED:
            self._send(response_to(request))
            assert self.mux is not None  # CONFIGURING comes only from an accepted attach
            if move.to is Phase.ATTACHED:
                self.mux.start()
        elif (refused := command_refusal(command)) is not None:
            self._fail(request, refused)  # debugpy would never answer: nothing is sent
        elif not self.grant.allows(command) and not isinstance(self.mux, CaptureMux):
            # A capture session runs nothing anywhere: a view token may ask it anything.
            self._fail(
                request,
                f"the token {self.grant.name!r} may only look: {command!r} needs a debug token",
            )
        elif (problem := argument_problem(command, request.arguments)) is not None:
            self._fail(request, problem)  # debugpy would drop the worker's connection
        else:
            assert self.mux is not None
            self._spawn(self._answering(request, self._relay(self.mux, request)))
        if move.to is not None and self.phase is not Phase.CLOSED:
            self.phase = move.to

    async def _answering(self, request: Request, handling: Awaitable[None]) -> None:
        """Run a request's handler; whatever it raises, the request gets its one answer."""
        try:
            await handling
        except _TOLD as exc:
            if request.seq in self._unanswered:
                self._fail(request, str(exc))
        except Exception:
            log.exception("client %s: %r failed", self.peer, request.command)
            if request.seq in self._unanswered:
                self._fail(request, f"raydap failed on {request.command!r} (see the bridge log)")

    async def _on_attach(self, request: Request) -> None:
        """Accept an attach, or refuse it with AttachError (answered by the caller)."""
        args = request.args
        self.grant = self._authorize(args)  # before anything can reach a worker
        child_sessions = bool(args.get("childSessions"))
        if child_sessions and not self._client_arguments.get("supportsStartDebuggingRequest"):
            raise AttachError("childSessions needs a client that supports startDebugging")
        resume = self._resume(args.get("resume"))
        feed = await self._resolve(args, self.grant)
        if isinstance(feed, CaptureFeed):
            self.mux = CaptureMux(feed, self._send)
            self._audit("attach", capture=feed.id)
            self._send(response_to(request))
            self._send(event("initialized"))
            return
        passed_on = ("type", "localRoot", "pathMappings", "token", "allThreads")
        self.mux = WorkerMux(
            feed,
            self._send,
            PathMapper.from_attach(args),
            audit=self._audit_request,
            debugs=self.grant.debugs,
            redactor=self._redactor,
            all_threads=bool(args.get("allThreads")),
            child_sessions=child_sessions,
            child_configuration={k: args[k] for k in passed_on if k in args},
        )
        if resume is not None:
            self.mux.restore(resume)
        self._audit(
            "attach",
            worker=feed.worker.key if isinstance(feed, SingleWorker) else None,
            follow=None if isinstance(feed, SingleWorker) else args.get("follow", True),
            resumed=resume is not None,
        )
        self._send(response_to(request))
        if isinstance(feed, SingleWorker):
            actual = bridge_capabilities(feed.worker.upstream.capabilities)
            if actual != self._announced:
                self._send(event("capabilities", {"capabilities": actual}))
        self._send(event("initialized"))

    def _resume(self, given: object) -> Resume | None:
        """An attach's ``resume`` (the session it continues, from a replaced bridge), keeping
        only the configuration this session's token may set."""
        if given is None:
            return None
        try:
            resume = Resume.model_validate(given)
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(str(part) for part in problem["loc"])
            raise AttachError(
                f"resume is not one a raydap bridge gave: {where}: {problem['msg']}"
            ) from None

        def allowed(command: str, arguments: dict[str, Any]) -> bool:
            return self.grant.allows(command) and argument_problem(command, arguments) is None

        breakpoints = [b for b in resume.breakpoints if allowed(b.command, b.arguments)]
        configuration = [c for c in resume.configuration if allowed(c.command, c.arguments)]
        return resume.model_copy(
            update={"breakpoints": breakpoints, "configuration": configuration}
        )

    def replaced(self, pid: int) -> None:
        """This bridge process hands over to ``pid``: give the client what it needs to resume
        this session there (:mod:`.resume`); the session ends when the process does."""
        if self.mux is None or self.phase is not Phase.ATTACHED:
            return
        body = {
            "pid": pid,
            "message": f"this bridge was replaced by pid {pid}: attach again with 'resume'",
            "resume": self.mux.resume_state().model_dump(mode="json"),
        }
        self._send(event(REPLACED, body))

    async def _relay(self, mux: WorkerMux | CaptureMux, request: Request) -> None:
        response = await mux.handle(request)
        self._send(response.model_copy(update={"request_seq": request.seq}))

    # -- plumbing ---------------------------------------------------------------------------

    def _audit_request(self, command: str, worker: str, arguments: dict[str, Any]) -> None:
        self._audit(
            command,
            worker=worker,
            expression=arguments.get("expression"),
            path=arguments.get("path"),
            variable=arguments.get("name"),
            value=arguments.get("value"),
        )

    def _audit(self, action: str, **details: Any) -> None:
        if self._audit_sink is not None:
            self._audit_sink(action, client=self.peer, token=self.grant.name, **details)

    def revoke(self, why: str) -> None:
        """End the session at once because what allowed it was taken back (a token removed)."""
        self._end(why)
        self._spawn(self._abort_once_said())

    async def _abort_once_said(self) -> None:
        await self.sent(2.0)
        self._abort()

    def _leave(self) -> None:
        if self.phase is Phase.CLOSED:
            return
        self.phase = Phase.CLOSED
        if self.mux is not None:
            self.mux.close()

    def _abort(self) -> None:
        """End the session from the sending side: closing the channel ends :meth:`run`."""
        self._leave()
        self._spawn(self.channel.close())

    def _spawn(self, coroutine: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _end(self, why: str) -> None:
        """Say why the bridge ends the session, then end it as a debug adapter does."""
        log.info("client %s: %s", self.peer, why)
        self._send(event("output", {"category": "important", "output": why + "\n"}))
        self._send(event("terminated"))

    def _fail(self, request: Request, text: str) -> None:
        self._fail_seq(request.seq, request.command, text)

    def _fail_seq(self, seq: int, command: str, text: str) -> None:
        """The one place this session builds an error reply."""
        self._send(error_response(seq, command, text))

    def _send(self, message: Request | Response | Event) -> None:
        if isinstance(message, Response):
            self._unanswered.discard(message.request_seq)
        if self.phase is Phase.CLOSED and not isinstance(message, Response):
            return
        if self._outbox.qsize() >= self._max_queued:
            log.warning("client %s is not reading; closing it", self.peer)
            self._abort()
            return
        self._outbox.put_nowait(message)

    async def sent(self, timeout: float) -> bool:
        """Wait until everything queued for the client was written (False: not in time)."""
        try:
            await asyncio.wait_for(self._outbox.join(), timeout)
        except asyncio.TimeoutError:
            return False
        return True

    async def _write_loop(self) -> None:
        while (message := await self._outbox.get()) is not None:
            self._seq += 1
            try:
                await self.channel.send(message, self._seq)
            except (ConnectionError, OSError):
                self._abort()
                return
            finally:
                self._outbox.task_done()
