"""Requests to one worker's debugpy, for an :class:`~.connection.Upstream`: sent in wire order,
answered from the stop cache when the same question was asked during this stop, timed, and
counted while breakpoints are being set (a stop at one of them may come first on the wire,
naming an id the bridge learns only from the answer). The worker asked is seen only through
:class:`Asked`."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from raydap.adapter.channel import Channel
from raydap.adapter.errors import Kind, UpstreamClosed, UpstreamError
from raydap.adapter.requests import RequestEngine
from raydap.adapter.upstream.cache import Key, StopCache, answer_for
from raydap.adapter.upstream.life import Life, State
from raydap.adapter.upstream.quirks import mend_response, refusal
from raydap.protocol import Event, Request, Response, Route
from raydap.protocol import command as command_info

#: Told of each request that reached the worker: ``(command, seconds, ok)``.
Observe = Callable[[str, float, bool], None]


class Asked(Protocol):
    """The worker being asked, as its requests need to see it."""

    name: str
    #: Why it closed, said in the error of a request that finds it gone.
    close_reason: str

    @property
    def life(self) -> Life: ...

    @property
    def state(self) -> State: ...

    async def before_stopping(self) -> Sequence[str]:
        """Awaited before a request that can stop the worker (``pause``) is sent."""
        ...

    def configured(self, command: str, arguments: dict[str, Any]) -> None:
        """The worker accepted a breakpoint configuration."""
        ...

    def announce(self, text: str, category: str = "console") -> None:
        """Tell every session of the worker."""
        ...


class Asking:
    """The requests of one worker, and the cache of what it said during its current stop."""

    def __init__(
        self,
        channel: Channel,
        worker: Asked,
        *,
        timeout: float,
        observe: Observe | None,
        on_answer: Callable[[Request, Response], None],
    ) -> None:
        self.worker = worker
        self.timeout = timeout
        self.cache = StopCache()
        self.engine = RequestEngine(channel, on_answer=on_answer)
        self._observe = observe
        #: Breakpoint settings sent and not answered yet.
        self._configuring = 0
        self._configuration_answered = asyncio.Event()
        self._configuration_answered.set()

    @property
    def configuring(self) -> bool:
        """Whether breakpoint settings were sent and are not answered yet."""
        return self._configuring > 0

    @property
    def waiting(self) -> bool:
        """Whether a request waits for its answer."""
        return bool(self.engine.waiting)

    async def configuration_answered(self) -> None:
        """Until every breakpoint setting sent is answered (at most the request timeout)."""
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._configuration_answered.wait(), self.timeout)

    def read_loop(self, on_event: Callable[[Event], None]) -> Awaitable[None]:
        return self.engine.read_loop(on_event)

    def fail_pending(self, error: Exception) -> None:
        self.engine.fail_pending(error)

    async def answered(self, command: str, arguments: dict[str, Any]) -> Response:
        """:meth:`request`, with a worker that cannot be asked as a failed response."""
        try:
            return await self.request(command, arguments)
        except UpstreamError as exc:
            return Response(request_seq=0, success=False, command=command, message=str(exc))

    async def request(
        self, command: str, arguments: Any = None, *, timeout: float | None = None
    ) -> Response:
        """Send a request and return debugpy's response (successful or not); a read-only
        request of a stopped worker asked before during this stop is answered from the cache.
        Raises :class:`UpstreamClosed` if the worker goes away and :class:`UpstreamError` if
        it does not answer in time; either way only this request fails."""
        refused = refusal(command, arguments)
        if refused is not None:
            return mend_response(
                Response(request_seq=0, success=False, command=command, message=refused)
            )
        key = self.cache.key(command, arguments) if self.worker.state is State.STOPPED else None
        if command == "pause":
            await self.worker.before_stopping()
        if key is None:
            return await self._configure_or_ask(command, arguments, timeout)
        answer = self.cache.get(key)
        if answer is None:
            upstream_arguments = self.cache.upstream_arguments(command, arguments)
            answer = asyncio.ensure_future(self.exchange(command, upstream_arguments, timeout))
            self.cache.put(key, answer)
            answer.add_done_callback(functools.partial(self._settled, key))
        return answer_for(command, arguments, await asyncio.shield(answer))

    async def _configure_or_ask(
        self, command: str, arguments: Any, timeout: float | None
    ) -> Response:
        configures = command_info(command).route is Route.BROADCAST
        if configures:
            self._configuring += 1
            self._configuration_answered.clear()
        try:
            response = await self.exchange(command, arguments, timeout)
        finally:
            if configures:
                self._configuring -= 1
                if not self._configuring:
                    self._configuration_answered.set()
        if response.success:
            self.cache.after_request(command, arguments)
            if configures:
                self.worker.configured(command, dict(arguments or {}))
        return response

    def _settled(self, key: Key, answer: asyncio.Future[Response]) -> None:
        if answer.cancelled() or answer.exception() is not None or not answer.result().success:
            self.cache.discard(key, answer)

    async def exchange(self, command: str, arguments: Any, timeout: float | None) -> Response:
        """One request and its response, past the cache."""
        worker = self.worker
        if worker.state is State.CLOSED:
            raise UpstreamClosed(f"worker {worker.name} is gone ({worker.close_reason})")
        if worker.life is Life.LENT:
            raise UpstreamError(
                f"{worker.name} is being handed to a new bridge: try again", Kind.UNAVAILABLE
            )
        waited = timeout or self.timeout
        started = time.perf_counter()
        ok = False
        try:
            response = await self.engine.request(command, arguments, timeout=waited)
            ok = response.success
        except asyncio.TimeoutError:  # before OSError: TimeoutError is one since 3.11
            why = f"worker {worker.name} did not answer {command!r} within {waited:g} s"
            self._tell_waiting(why)
            raise UpstreamError(why, Kind.TIMED_OUT) from None
        except UpstreamClosed:
            raise
        except (ConnectionError, OSError) as exc:
            raise UpstreamClosed(f"worker {worker.name} is gone: {exc!r}") from None
        finally:
            if self._observe is not None:
                self._observe(command, time.perf_counter() - started, ok)
        return mend_response(response)

    def _tell_waiting(self, why: str) -> None:
        """Every session of the worker hears why it may stop answering: debugpy handles one
        request at a time, so one that runs long (an ``evaluate`` that never returns) holds
        the worker's debugger for everyone until it ends (docs/security.md)."""
        self.worker.announce(
            f"raydap: {why}; until it does, this worker answers no other request of any "
            "session (a long evaluate holds its debugger)",
            "important",
        )

    async def frames(self, thread_id: int, levels: int = 0) -> list[dict[str, Any]]:
        """A stopped thread's top ``levels`` frames (0: all of them); UpstreamError if the
        worker reports none."""
        arguments: dict[str, Any] = {"threadId": thread_id, "startFrame": 0}
        if levels:
            arguments["levels"] = levels
        response = await self.request("stackTrace", arguments)
        frames = (response.body or {}).get("stackFrames") or [] if response.success else []
        if not frames:
            name = self.worker.name
            raise UpstreamError(f"{name} has no stack: {response.message}", Kind.REFUSED)
        return list(frames)

    async def prefetch(self, thread_id: int) -> None:
        """Warm the cache with what every editor asks first when a worker stops: the threads,
        the stack, and the top frame's scopes and locals."""

        async def top_of_stack() -> None:
            trace = await self.request("stackTrace", {"threadId": thread_id})
            frames = (trace.body or {}).get("stackFrames") or []
            if frames and self.worker.state is State.STOPPED:
                scopes = await self.request("scopes", {"frameId": frames[0]["id"]})
                for scope in (scopes.body or {}).get("scopes", [])[:1]:
                    reference = scope.get("variablesReference")
                    if reference:
                        await self.request("variables", {"variablesReference": reference})

        # Failures are not worth reporting: a warm-up that fails just leaves the cache cold.
        await asyncio.gather(self.request("threads"), top_of_stack(), return_exceptions=True)
