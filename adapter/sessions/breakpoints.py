"""One session's breakpoints, across the workers it shows: its own ids and answers (the
:class:`~.breakpoints.SessionBook`), its share given to each worker's one owner of
breakpoints (:class:`~.worker_breakpoints.WorkerBreakpoints`), and what workers later say of
them (a hit, a breakpoint verified once its file loads, a capture point turned off) mapped
back to the session's ids. A part of :class:`~.mux.WorkerMux`, which routes to it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any

from raydap.adapter.captures import points as capture_points
from raydap.adapter.errors import Kind, WorkerError
from raydap.adapter.resume import BreakpointList
from raydap.adapter.sessions.paths import PathMapper
from raydap.adapter.sessions.workers import Worker
from raydap.adapter.upstream.books import BookKey, SessionBook, Spec, book_key, requested
from raydap.protocol import Event, Request, Response, event, response_to


class SessionBreakpoints:
    def __init__(
        self,
        paths: PathMapper,
        send: Callable[[Event], None],
        audit: Callable[[str, str, dict[str, Any]], None],
    ) -> None:
        self._paths = paths
        self._send = send
        self._audit = audit
        #: The session's breakpoints under its own ids (the workers' books hold the unions).
        self.book = SessionBook()
        self._arguments: dict[BookKey, dict[str, Any]] = {}  # the last set request's
        self._keys: dict[tuple[str, BookKey], BookKey] = {}  # (worker, its key) -> ours

    # -- what the session sets ---------------------------------------------------------------

    async def set(self, request: Request, workers: Sequence[Worker]) -> Response:
        """The session's new list for one file (or its function breakpoints): given to every
        worker, and to each that joins later; answered with the session's own ids. Raises
        ``refused`` when no worker can take it (a request, not a breakpoint, is wrong)."""
        key = book_key(request.command, request.args)
        asked = requested(request.command, request.args)
        if request.command == "setBreakpoints":
            before = [json.loads(entry.spec) for entry in self.book.entries(key)]
            asked = capture_points.tag(key[1], asked, before)
        self.book.set(key, asked)
        self._arguments[key] = request.args
        for worker in workers:
            self._audit(request.command, worker.key, request.args)
        refusals = await asyncio.gather(*(self.give(worker, key) for worker in workers))
        if workers and all(refusals):
            raise WorkerError(str(refusals[0]), Kind.REFUSED)
        self.announce()  # what changed elsewhere meanwhile (a worker left)
        return response_to(request, {"breakpoints": self.book.shown(key)})

    async def give_all(self, worker: Worker) -> None:
        """A worker joins: it gets every list of the session."""
        await asyncio.gather(*(self.give(worker, key) for key in self.book.lists()))

    async def give(self, worker: Worker, key: BookKey) -> str | None:
        """Give a worker this session's share of list ``key`` (its owner sends the union) and
        keep the worker's answers. Never raises: returns why the worker refused, if it did."""
        command, path = key
        entries = self.book.entries(key)
        worker_key = (command, self._paths.to_worker(worker.key, path) if path else "")
        self._keys[worker.key, worker_key] = key
        given = await worker.upstream.breakpoints.give(
            self, worker_key, [entry.spec for entry in entries], self._arguments[key]
        )
        shares = given.shares
        if given.refused is not None:
            why = f"{worker.label}: {given.refused}"
            shares = [{"verified": False, "message": why} for _ in entries]
        self.book.answered(worker.key, entries, shares)
        return given.refused

    def take_back(self, worker: Worker, *, resend: bool) -> None:
        """Take the session's share out of a worker (``resend``: one that runs on)."""
        worker.upstream.breakpoints.take_back(self, resend=resend)

    # -- what workers say of them -------------------------------------------------------------

    def changed(self, worker: Worker, body: dict[str, Any] | None) -> None:
        """A worker's later word on a breakpoint (debugpy verifies some once a file loads)."""
        changed = (body or {}).get("breakpoint")
        if not isinstance(changed, dict) or (body or {}).get("reason") != "changed":
            return
        ours = self._ours(worker, changed.get("id"))
        if ours is None:
            return  # another session's breakpoint
        self.book.answered_one(worker.key, *ours, dict(changed))
        self.announce()

    def point_off(self, worker: Worker, body: dict[str, Any]) -> None:
        """A worker turned one of this session's capture points off: the client is told, on
        the breakpoint, in which worker and why."""
        why = f"turned itself off in {worker.label}: {body.get('reason')}"
        for key in self.book.lists():
            for entry in self.book.entries(key):
                settings = json.loads(entry.spec).get(capture_points.SETTINGS)
                if isinstance(settings, dict) and settings.get("id") == body.get("point"):
                    self.book.turned_off(worker.key, key, entry.spec, why)
        self.announce()

    def announce(self) -> None:
        """Tell the client of each of its breakpoints whose state changed."""
        for breakpoint in self.book.changes():
            self._send(event("breakpoint", {"reason": "changed", "breakpoint": breakpoint}))

    def hit_ids(self, worker: Worker, hits: list[Any]) -> list[int]:
        """The session's ids for the worker's breakpoint ids in a stop."""
        ids: list[int] = []
        for hit in hits:
            if (ours := self._ours(worker, hit)) is not None:
                ids.extend(self.book.ids_of(*ours))
        return ids

    def forget_worker(self, worker_key: str) -> None:
        self._keys = {k: v for k, v in self._keys.items() if k[0] != worker_key}
        self.book.forget_worker(worker_key)

    def _ours(self, worker: Worker, worker_id: object) -> tuple[BookKey, Spec] | None:
        """This session's list and spec for a worker's breakpoint id, if it set that one."""
        found = worker.upstream.breakpoints.spec_of_id(worker_id)
        ours = self._keys.get((worker.key, found[0])) if found else None
        return (ours, found[1]) if found is not None and ours is not None else None

    # -- going on in another bridge process (:mod:`.resume`) -----------------------------------

    def export(self) -> list[BreakpointList]:
        return [
            BreakpointList(
                command=command,
                arguments=self._arguments[(command, path)],
                ids=[entry.id for entry in self.book.entries((command, path))],
            )
            for command, path in self.book.lists()
        ]

    def restore(self, lists: Sequence[BreakpointList]) -> None:
        """The lists the client's session had in the replaced bridge, under the same ids."""
        for given in lists:
            key = book_key(given.command, given.arguments)
            self.book.set(key, requested(given.command, given.arguments), given.ids)
            self._arguments[key] = given.arguments
            self.book.shown(key)  # the client knows these ids
