"""Stops moved out of Ray's breakpoint hook before anyone sees them (Python 3.12+ without
``raydap.live``; :mod:`.ray_hook` says why, :mod:`.settler` decides, this sends what it plans).
Owned by an :class:`~.connection.Upstream`, which gives it what it needs: the worker's public
side (:class:`Settled`), its uncached exchange, and where a stop is shown."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from raydap.adapter.errors import UpstreamError
from raydap.adapter.upstream.life import State
from raydap.adapter.upstream.ray_hook import DROP_TAGS_STATEMENT, REARM_STATEMENT, Settle
from raydap.adapter.upstream.settler import Settler
from raydap.protocol import Event, Response

log = logging.getLogger("raydap.adapter.upstream.connection")

#: One request and its answer, past the stop cache: ``(command, arguments, timeout)``.
Exchange = Callable[[str, Any, "float | None"], Awaitable[Response]]


class Settled(Protocol):
    """The worker whose stops are settled, as anyone may see and ask it."""

    name: str
    #: Whether its ``breakpoint()`` stops inside Ray's hook: learned here at its first stop.
    stops_in_ray_hook: bool | None

    @property
    def state(self) -> State: ...

    async def stack(self, levels: int = 0) -> tuple[int, list[dict[str, Any]]]: ...

    async def request(
        self, command: str, arguments: Any = None, *, timeout: float | None = None
    ) -> Response: ...


class OutOfHook:
    """Each stop of one worker that lands inside Ray's hook, stepped out of it before it is
    shown (a ``stopped`` event it takes is not shown until then)."""

    def __init__(
        self,
        worker: Settled,
        exchange: Exchange,
        show: Callable[[Event], None],
        spawn: Callable[[Awaitable[None]], None],
        first_stop: asyncio.Event,
    ) -> None:
        self.worker = worker
        self.settler = Settler()
        self._exchange = exchange
        self._show = show
        self._spawn = spawn
        self._first_stop = first_stop

    @property
    def busy(self) -> bool:
        """Whether a stop is being moved (a worker lent meanwhile would lose it)."""
        return bool(self.settler)

    def takes(self, message: Event) -> bool:
        """Whether this ``stopped`` event is settled here (then :meth:`settle` it) rather than
        shown as it is."""
        body = message.body if isinstance(message.body, dict) else {}
        return self.settler.takes(body.get("threadId"), body, self.worker.stops_in_ray_hook)

    async def settle(self, message: Event) -> None:
        """Move a stop out of Ray's breakpoint hook before anyone sees it (:mod:`.ray_hook`).

        Nothing is shown until the thread stands in the user's code: a step out of the hook
        is answered by a new ``stopped`` event, which comes back here. Whatever fails, the
        stop is shown where it is."""
        body = message.body if isinstance(message.body, dict) else {}
        thread_id = int(body["threadId"])
        settling = self.settler.begin(thread_id, message)
        action, moved = Settle.SHOW, None
        try:
            trace = await self._exchange(
                "stackTrace", {"threadId": thread_id, "startFrame": 0, "levels": 2}, None
            )
            frames = (trace.body or {}).get("stackFrames") or [] if trace.success else []
            action = self.settler.plan(settling, frames)
            if settling.steps == 0 and self.worker.stops_in_ray_hook is None:
                self.worker.stops_in_ray_hook = action is not Settle.SHOW
                if self.worker.stops_in_ray_hook:  # Python 3.12+, no raydap.live: see ray_hook
                    self._spawn(self.drop_pydevd_tags())
            if action is Settle.STEP:
                self.settler.moving(thread_id, settling, action)
                moved = await self._exchange("next", {"threadId": thread_id}, None)
            elif action is Settle.REARM:
                rearmed = await self._exchange(
                    "evaluate",
                    {"expression": REARM_STATEMENT, "frameId": frames[0]["id"], "context": "repl"},
                    None,
                )
                if not rearmed.success:
                    log.warning("%s: cannot show its post-mortem stop: %s", self.worker.name,
                                rearmed.message)  # fmt: skip
                    action = Settle.SHOW
                else:
                    self.settler.moving(thread_id, settling, action)
                    moved = await self._exchange("continue", {"threadId": thread_id}, None)
            if moved is not None and not moved.success:
                self.settler.drop(thread_id)
                action = Settle.SHOW
        except UpstreamError as exc:
            self.settler.drop(thread_id)
            if self.worker.state is State.CLOSED:
                return
            log.warning("%s: showing a stop as it is: %s", self.worker.name, exc)
            action = Settle.SHOW
        except Exception:  # a bug here must not hide the stop from everyone
            self.settler.drop(thread_id)
            log.exception("%s: showing a stop as it is", self.worker.name)
            action = Settle.SHOW
        if action is Settle.SHOW:
            self._show(settling.shown or message)

    async def drop_pydevd_tags(self) -> None:
        """Once the worker shows its stop, keep its later exceptions picklable
        (:mod:`.ray_hook`)."""
        await self._first_stop.wait()
        try:
            _, frames = await self.worker.stack(levels=1)
            answer = await self.worker.request(
                "evaluate",
                {"expression": DROP_TAGS_STATEMENT, "frameId": frames[0]["id"], "context": "repl"},
            )
        except UpstreamError as exc:
            answer = None
            log.info("%s: pydevd's exception tags left as they are: %s", self.worker.name, exc)
        if answer is not None and not answer.success:
            log.info(
                "%s: pydevd's exception tags left as they are: %s", self.worker.name, answer.message
            )
