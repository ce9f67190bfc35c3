"""Session-wide ids for ids that are only unique within one worker.

Each debugpy numbers its threads, frames, variables and sources from 1, so a session showing
several workers gives the client its own numbers and translates back. Frames and variables die
when their worker resumes (DAP says they are valid only while stopped), so the map of a worker
is dropped then, and the maps stay as large as what is currently paused.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Generic, TypeVar

Key = TypeVar("Key", bound=Hashable)


class IdMap(Generic[Key]):
    """A two-way map between ``(worker key, worker's id)`` and a session-wide id."""

    def __init__(self) -> None:
        self._to_client: dict[tuple[Key, int], int] = {}
        self._to_worker: dict[int, tuple[Key, int]] = {}
        self._by_key: dict[Key, set[int]] = {}
        self._next = 1

    def __len__(self) -> int:
        return len(self._to_worker)

    def to_client(self, key: Key, local: int) -> int:
        """The session-wide id of a worker's id; 0 (DAP's "none") stays 0."""
        if not local:
            return 0
        found = self._to_client.get((key, local))
        if found is None:
            found = self._next
            self._next += 1
            self._to_client[(key, local)] = found
            self._to_worker[found] = (key, local)
            self._by_key.setdefault(key, set()).add(found)
        return found

    def to_worker(self, client_id: int) -> tuple[Key, int] | None:
        return self._to_worker.get(client_id)

    def ids_of(self, key: Key) -> list[int]:
        """The session-wide ids handed out for one worker, oldest first."""
        return sorted(self._by_key.get(key, ()))

    def triples(self) -> list[tuple[Key, int, int]]:
        """Every mapping as ``(worker key, worker's id, session-wide id)``."""
        return [(key, local, found) for (key, local), found in self._to_client.items()]

    def seed(self, triples: Iterable[tuple[Key, int, int]]) -> None:
        """Take over mappings an earlier session gave its client (a replaced bridge's), so
        the client's ids stay good; new ids are numbered after them. Ids already mapped here,
        or given twice, are skipped."""
        for key, local, found in triples:
            if not local or found <= 0 or (key, local) in self._to_client:
                continue
            if found in self._to_worker:
                continue
            self._to_client[(key, local)] = found
            self._to_worker[found] = (key, local)
            self._by_key.setdefault(key, set()).add(found)
            self._next = max(self._next, found + 1)

    def forget(self, key: Key) -> None:
        """Drop every id of one worker (it resumed, or left)."""
        for client_id in self._by_key.pop(key, ()):
            self._to_client.pop(self._to_worker.pop(client_id), None)
