"""Breakpoints: what each session set, what each worker was given, what each client is shown.

Pure state, no I/O: the workers' owners and the mux send what these books return. Two halves,
because two things share a worker and a worker shares nothing:

- :class:`WorkerBook`, one per worker (held by its one owner, :mod:`.breakpoints`):
  every session's breakpoints per file. debugpy keeps one list per file, so the worker is given
  the union, and its answers and hits are split back to the sessions that asked.
- :class:`SessionBook`, one per client session: its breakpoints under ids of its own, and the
  answers of each of its workers. A breakpoint is shown verified once any worker verified it;
  when that changes (a worker joins, verifies, leaves) the book says which ids to announce in
  ``breakpoint`` events, but only ids the client was already given.

A breakpoint's identity is its spec: the client's breakpoint object, frozen (line, condition,
hitCondition, logMessage, or a function's name). Two sessions asking for the same spec share
one breakpoint in the worker.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from raydap.adapter.captures.points import for_worker, is_capture

#: Which breakpoint list: ``(command, path)``; the path is "" for function breakpoints.
BookKey = tuple[str, str]
#: A breakpoint as the client asked for it, hashable (canonical JSON of its object).
Spec = str
#: A worker's answer for one breakpoint (a DAP ``Breakpoint`` object).
Answer = dict[str, Any]

#: The commands whose breakpoints the books keep; other configuration is passed on as is.
BOOK_COMMANDS = frozenset({"setBreakpoints", "setFunctionBreakpoints"})
NO_WORKER_YET = "no worker in this session yet"


def spec_of(breakpoint: Any) -> Spec:
    return json.dumps(breakpoint if isinstance(breakpoint, dict) else {}, sort_keys=True)


def stops(spec: Spec) -> bool:
    """Whether the breakpoint can stop its worker: capture points and log points never do."""
    breakpoint = json.loads(spec)
    return not is_capture(breakpoint) and not breakpoint.get("logMessage")


def book_key(command: str, arguments: dict[str, Any]) -> BookKey:
    source = arguments.get("source")
    path = source.get("path") if isinstance(source, dict) else None
    return command, path if isinstance(path, str) else ""


def requested(command: str, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    """The breakpoint objects of a set request (``lines``, the deprecated form, included)."""
    found = arguments.get("breakpoints")
    if isinstance(found, list):
        return [b for b in found if isinstance(b, dict)]
    lines = arguments.get("lines") if command == "setBreakpoints" else None
    if isinstance(lines, list):
        return [{"line": line} for line in lines if isinstance(line, int)]
    return []


def set_arguments(
    base: dict[str, Any], path: str, union: Sequence[Spec], capture: dict[str, Any] | None = None
) -> tuple[dict[str, Any], list[int]]:
    """A set request for a worker: ``base`` (the client's other arguments) with the union as
    its breakpoints, for the worker's ``path`` ("" for function breakpoints); and, for each
    spec of the union, the position of its breakpoint in the request (capture points of one
    line are given as one breakpoint: :func:`~.capture_points.for_worker`, each carrying
    ``capture`` beside its own settings)."""
    arguments = {k: v for k, v in base.items() if k != "lines"}  # lines: the deprecated form
    arguments["breakpoints"], positions = for_worker([json.loads(s) for s in union], capture)
    if path:
        arguments["source"] = {**arguments.get("source", {}), "path": path}
    return arguments, positions


def per_spec(answers: Sequence[Any], positions: Sequence[int]) -> list[Any]:
    """A worker's answers to a request, one for each spec of the union it was made from."""
    return [answers[p] if p < len(answers) else None for p in positions]


def split(specs: Sequence[Spec], union: Sequence[Spec], answers: Sequence[Any]) -> list[Answer]:
    """One session's share of a worker's answers to ``union``, in the session's order."""
    position = {spec: i for i, spec in enumerate(union)}
    shares: list[Answer] = []
    for spec in specs:
        i = position.get(spec)
        answer = answers[i] if i is not None and i < len(answers) else None
        shares.append(
            dict(answer)
            if isinstance(answer, dict)
            else {"verified": False, "message": "the worker did not answer for it"}
        )
    return shares


class WorkerBook:
    """Every session's breakpoints in one worker, per file; the worker has their union."""

    def __init__(self) -> None:
        self._owned: dict[BookKey, dict[Hashable, tuple[Spec, ...]]] = {}
        self._ids: dict[BookKey, dict[int, Spec]] = {}  # the worker's ids, from its answers
        #: The ids of each list before its last answer: a stop the worker made just before
        #: the list was set again names one of them (debugpy never reuses an id).
        self._replaced: dict[BookKey, dict[int, Spec]] = {}

    def put(self, owner: Hashable, key: BookKey, specs: Iterable[Spec]) -> tuple[Spec, ...]:
        """``owner`` now wants exactly ``specs`` in this list; the union the worker gets."""
        owners = self._owned.setdefault(key, {})
        owners[owner] = tuple(dict.fromkeys(specs))
        return self.union(key)

    def union(
        self, key: BookKey, owners: Callable[[Hashable], bool] | None = None
    ) -> tuple[Spec, ...]:
        """Every owner's breakpoints in this list (or those ``owners`` says), once each."""
        every = (
            spec
            for owner, specs in self._owned.get(key, {}).items()
            if owners is None or owners(owner)
            for spec in specs
        )
        return tuple(dict.fromkeys(every))

    def share(self, owner: Hashable, key: BookKey) -> tuple[Spec, ...]:
        """What ``owner`` wants in this list."""
        return self._owned.get(key, {}).get(owner, ())

    def stops(self) -> bool:
        """Whether any list holds a breakpoint that can stop the worker."""
        return any(stops(spec) for key in self._owned for spec in self.union(key))

    def remove(self, owner: Hashable) -> list[BookKey]:
        """Forget what ``owner`` set; the lists whose union shrank, to send again."""
        changed = []
        for key, owners in self._owned.items():
            before = self.union(key)
            if owners.pop(owner, None) is not None and self.union(key) != before:
                changed.append(key)
        return changed

    def answered(self, key: BookKey, union: Sequence[Spec], answers: Sequence[Any]) -> None:
        """Learn the worker's ids for the breakpoints of ``union`` from its answer."""
        self._replaced[key] = self._ids.get(key, {})
        ids: dict[int, Spec] = {}
        for spec, answer in zip(union, answers, strict=False):
            if not isinstance(answer, dict) or not isinstance(answer.get("id"), int):
                continue
            # One breakpoint of a line stands for its capture points and a plain one: a stop
            # there is the plain one's (capture points never stop).
            if answer["id"] not in ids or not is_capture(json.loads(spec)):
                ids[answer["id"]] = spec
        self._ids[key] = ids

    def spec_of_id(self, worker_id: object) -> tuple[BookKey, Spec] | None:
        """Which breakpoint a worker id (in a hit or a ``breakpoint`` event) stands for."""
        if not isinstance(worker_id, int):
            return None
        for generation in (self._ids, self._replaced):
            for key, ids in generation.items():
                if worker_id in ids:
                    return key, ids[worker_id]
        return None


@dataclass(frozen=True)
class Entry:
    """One breakpoint of a session: the id the client knows it by, and what was asked."""

    id: int
    spec: Spec
    line: int | None


class SessionBook:
    """One session's breakpoints and what its workers answered for them."""

    def __init__(self) -> None:
        self._entries: dict[BookKey, tuple[Entry, ...]] = {}
        self._answers: dict[str, dict[int, Answer]] = {}  # worker -> entry id -> its answer
        self._told: dict[int, Answer] = {}  # what the client was last shown, by id
        #: Capture points a worker turned off: worker -> entry id -> why. Kept apart from the
        #: answers: the worker's answer to the list may be read after its point turned off.
        self._off: dict[str, dict[int, str]] = {}
        self._next_id = 1

    def lists(self) -> list[BookKey]:
        """The breakpoint lists this session set (one per file, and its function breakpoints)."""
        return list(self._entries)

    def entries(self, key: BookKey) -> tuple[Entry, ...]:
        return self._entries.get(key, ())

    def set(
        self,
        key: BookKey,
        breakpoints: Sequence[dict[str, Any]],
        ids: Sequence[int] | None = None,
    ) -> tuple[Entry, ...]:
        """The client's new list for ``key``: a breakpoint it had keeps its id. ``ids``: the
        ids the client already knows them by (a session resumed in a new bridge process)."""
        had = {entry.spec: entry for entry in self._entries.get(key, ())}
        given = list(ids) if ids is not None and len(ids) == len(breakpoints) else None
        taken = {entry.id for entries in self._entries.values() for entry in entries}
        entries = []
        for position, breakpoint in enumerate(breakpoints):
            spec = spec_of(breakpoint)
            entry = had.pop(spec, None)
            if entry is None:
                line = breakpoint.get("line")
                chosen = given[position] if given else 0
                if chosen <= 0 or chosen in taken:
                    chosen = self._next_id
                self._next_id = max(self._next_id, chosen + 1)
                taken.add(chosen)
                entry = Entry(chosen, spec, line if isinstance(line, int) else None)
            entries.append(entry)
        for gone in had.values():
            self._told.pop(gone.id, None)
            for answers in self._answers.values():
                answers.pop(gone.id, None)
            for off in self._off.values():
                off.pop(gone.id, None)
        self._entries[key] = tuple(entries)
        return self._entries[key]

    def answered(self, worker: str, entries: Sequence[Entry], answers: Sequence[Answer]) -> None:
        """A worker's answers for ``entries`` (as they were when sent)."""
        current = {entry.id for key_entries in self._entries.values() for entry in key_entries}
        mine = self._answers.setdefault(worker, {})
        for entry, answer in zip(entries, answers, strict=True):
            if entry.id in current:
                mine[entry.id] = answer

    def answered_one(self, worker: str, key: BookKey, spec: Spec, answer: Answer) -> None:
        """A worker's later word on one breakpoint (a ``breakpoint`` event)."""
        for entry in self._entries.get(key, ()):
            if entry.spec == spec:
                self._answers.setdefault(worker, {})[entry.id] = answer

    def turned_off(self, worker: str, key: BookKey, spec: Spec, why: str) -> None:
        """A worker turned a capture point of this session off."""
        for entry in self._entries.get(key, ()):
            if entry.spec == spec:
                self._off.setdefault(worker, {})[entry.id] = why

    def forget_worker(self, worker: str) -> None:
        self._answers.pop(worker, None)
        self._off.pop(worker, None)

    def ids_of(self, key: BookKey, spec: Spec) -> list[int]:
        return [entry.id for entry in self._entries.get(key, ()) if entry.spec == spec]

    def shown(self, key: BookKey) -> list[Answer]:
        """The list to answer the client's set request with; the client now knows these ids."""
        shown = [self._merged(key, entry) for entry in self._entries.get(key, ())]
        for breakpoint in shown:
            self._told[breakpoint["id"]] = breakpoint
        return shown

    def changes(self) -> list[Answer]:
        """The breakpoints the client was given whose state changed since it was told: the
        bodies of ``breakpoint`` events (reason ``changed``) to send now."""
        changed = []
        for key, entries in self._entries.items():
            for entry in entries:
                if entry.id not in self._told:
                    continue  # not given to the client yet: its set request answers for it
                merged = self._merged(key, entry)
                if merged != self._told[entry.id]:
                    self._told[entry.id] = merged
                    changed.append(merged)
        return changed

    def _merged(self, key: BookKey, entry: Entry) -> Answer:
        """Verified where any worker verified it; else why not, from a worker if one said. A
        capture point a worker turned off says so (unverified once every worker did)."""
        off = [whys[entry.id] for whys in self._off.values() if entry.id in whys]
        answers = [
            a[entry.id]
            for worker, a in self._answers.items()
            if entry.id in a and entry.id not in self._off.get(worker, {})
        ]
        chosen = next((a for a in answers if a.get("verified")), answers[0] if answers else None)
        shown: Answer = {"id": entry.id, "verified": bool(chosen and chosen.get("verified"))}
        if off:
            shown["message"] = off[0] if len(off) == 1 else f"{off[0]} (and {len(off) - 1} more)"
        line = chosen.get("line") if chosen else None
        if isinstance(line, int):
            shown["line"] = line
        elif entry.line is not None:
            shown["line"] = entry.line
        if not shown["verified"] and not off:
            message = chosen.get("message") if chosen else None
            shown["message"] = (
                message
                if isinstance(message, str) and message
                else (NO_WORKER_YET if not answers else "not verified by the workers")
            )
        command, path = key
        if command == "setBreakpoints" and path:
            shown["source"] = {"path": path}
        return shown
