"""Which threads of one worker stand stopped, and why: pure state, fed plain messages.

debugpy tells the client whose request resumed a worker, in its response, and sometimes sends
a ``continued`` event as well; a thread that exits while stopped ends its stop without either.
:class:`Stops` turns all of these into one answer: what ended, and the one ``continued`` event
every client of the worker is to be told.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from raydap.protocol import Event, event


class Stops(Mapping[int, Event]):
    """The ``stopped`` event in force for each stopped thread, in the order they stopped."""

    def __init__(self) -> None:
        self._by_thread: dict[int, Event] = {}

    def __getitem__(self, thread_id: int) -> Event:
        return self._by_thread[thread_id]

    def __iter__(self) -> Iterator[int]:
        return iter(self._by_thread)

    def __len__(self) -> int:
        return len(self._by_thread)

    def top(self) -> Event | None:
        """The most recent stop in force, the one a person wants to see first."""
        return next(reversed(self._by_thread.values()), None)

    def stopped(self, message: Event) -> None:
        """A stop to show: it becomes the newest, replacing its thread's previous one."""
        thread_id = (message.body or {}).get("threadId")
        if isinstance(thread_id, int):
            self._by_thread.pop(thread_id, None)
            self._by_thread[thread_id] = message

    def exited(self, thread_id: object) -> bool:
        """A thread exited; True if that ended a stop."""
        return isinstance(thread_id, int) and self._by_thread.pop(thread_id, None) is not None

    def resumed(self, thread_id: object, body: object) -> Event | None:
        """A resume (a response to ``continue``/``next``..., or a ``continued`` event): the
        ``continued`` event to tell every client, or None if no stop ended (already told)."""
        all_threads = (
            not isinstance(body, dict) or body.get("allThreadsContinued", True) is not False
        )
        if all_threads or not isinstance(thread_id, int):
            ended = bool(self._by_thread)
            self._by_thread.clear()
        else:
            ended = self._by_thread.pop(thread_id, None) is not None
        if not ended:
            return None
        continued: dict[str, Any] = {"allThreadsContinued": all_threads}
        continued["threadId"] = thread_id if isinstance(thread_id, int) else 0
        return event("continued", continued)

    def clear(self) -> None:
        self._by_thread.clear()
