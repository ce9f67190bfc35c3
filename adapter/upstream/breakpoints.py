"""The one owner of a worker's breakpoints: every session (an editor's, an agent's) gives and
takes back its share here, and nowhere else writes the worker's lists.

debugpy keeps one list per file, so two sessions sharing a worker cannot each send theirs: the
last would erase the other's. The owner keeps every session's share (:class:`WorkerBook`),
sends the worker their union, learns the worker's ids from its answer, and hands each session
back its own share of the answers. Each upstream has one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from raydap.adapter.upstream.books import (
    Answer,
    BookKey,
    Spec,
    WorkerBook,
    per_spec,
    set_arguments,
    split,
    stops,
)
from raydap.protocol import Response

#: Sends a request to the worker and returns its response; a worker that cannot be asked is
#: a failed response with why, never an exception.
Ask = Callable[[str, dict[str, Any]], Awaitable[Response]]
#: Waits until the worker may stop without getting its peers killed, and says which of them
#: may still be on their old collective timeout (the bridge's: ``adapter/`` cannot import it).
Gate = Callable[[], Awaitable[Sequence[str]]]


#: The owner of the lists a worker was given before a session set them: a restarted bridge's
#: kept breakpoints (:meth:`raydap.bridge.workers.live.LiveWorkers.configure`).
KEPT = "kept breakpoints"


@dataclass(frozen=True)
class Given:
    """What a worker made of one session's share of a list."""

    #: The worker's answer for each of the session's breakpoints, in the session's order.
    shares: list[Answer]
    #: Why the worker refused the whole list; ``None`` when it took it.
    refused: str | None = None
    #: Peers that may still be on their own collective timeout when the list was given (the
    #: gate waited its longest for them).
    unprotected: tuple[str, ...] = ()


class WorkerBreakpoints:
    """Every session's breakpoints in one worker; the worker has their union."""

    def __init__(self, ask: Ask, gate: Gate | None = None) -> None:
        self.book = WorkerBook()
        self._ask = ask
        #: Passed before a list that can stop the worker is sent (the bridge's hook).
        self.gate = gate
        #: What every capture point given to this worker carries beside its own settings (the
        #: bridge's redaction patterns: :meth:`raydap.live.redact.Redactor.settings`).
        self.capture_settings: dict[str, Any] = {}
        #: Lists sent again after a session left: they outlive it on purpose.
        self._sending: set[asyncio.Future[Response]] = set()

    async def give(
        self,
        owner: Hashable,
        key: BookKey,
        specs: Sequence[Spec],
        base: dict[str, Any],
        *,
        beside_kept: bool = False,
    ) -> Given:
        """``owner`` now wants exactly ``specs`` in list ``key`` (the worker's path); send the
        worker the union, with ``base`` (the session's other arguments of the request). A
        session's list replaces the :data:`KEPT` one, as it would replace it in the worker;
        ``beside_kept`` (capture points set outside any session) leaves it. A union that can
        stop the worker first passes :attr:`gate`, whoever gives it."""
        command, path = key
        if owner != KEPT and not beside_kept:
            self.book.put(KEPT, key, ())
        union = self.book.put(owner, key, specs)
        unprotected = await self.gate() if self.gate and any(map(stops, union)) else ()
        arguments, positions = set_arguments(base, path, union, self.capture_settings)
        response = await self._ask(command, arguments)
        if not response.success:
            why = response.message or "refused"
            return Given([{"verified": False, "message": why} for _ in specs], why)
        answers = per_spec((response.body or {}).get("breakpoints") or [], positions)
        self.book.answered(key, union, answers)
        return Given(split(specs, union, answers), unprotected=tuple(unprotected))

    def claim(self, owner: Hashable, key: BookKey, specs: Sequence[Spec]) -> None:
        """``owner``'s share of a list the worker already holds (a worker a replaced bridge
        handed over keeps its lists): recorded, nothing sent, so the next share given joins
        it rather than replacing it."""
        self.book.put(owner, key, specs)

    def take_back(self, owner: Hashable, *, resend: bool) -> None:
        """Forget what ``owner`` set. With ``resend`` (a worker that runs on), the lists that
        shrank are sent again in the background; a paused worker keeps them until its lists
        next change, so that its next stop is still somebody's to debug."""
        for command, path in self.book.remove(owner):
            if not resend:
                continue
            arguments, _ = set_arguments({}, path, self.book.union((command, path)))
            sent = asyncio.ensure_future(self._ask(command, arguments))
            self._sending.add(sent)
            sent.add_done_callback(self._sending.discard)

    def spec_of_id(self, worker_id: object) -> tuple[BookKey, Spec] | None:
        """Which breakpoint a worker id (in a hit or a ``breakpoint`` event) stands for."""
        return self.book.spec_of_id(worker_id)
