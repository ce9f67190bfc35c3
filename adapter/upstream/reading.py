"""The task that reads one worker's debugpy, and the work under way for it (settling a stop,
prefetching), for an :class:`~.connection.Upstream`. What ends the reading is said in words
its owner passes on to the worker's clients; a lent connection must have nothing under way."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from raydap.protocol import ProtocolError

#: Why reading stopped when the worker simply went away.
EXITED = "the worker exited (its debugger connection closed)"


class Reader:
    """Reads with ``read`` until it ends, then awaits ``ended(why)``: ``why`` is empty when the
    owner stopped the reading itself (it knows why)."""

    def __init__(
        self,
        name: str,
        read: Callable[[], Awaitable[None]],
        ended: Callable[[str], Awaitable[None]],
    ) -> None:
        self.name = name
        self._read = read
        self._ended = ended
        self._task: asyncio.Task[None] | None = None
        self._background: set[asyncio.Future[Any]] = set()

    @property
    def started(self) -> bool:
        return self._task is not None

    @property
    def reading(self) -> bool:
        """Whether it reads the worker (started, and not stopped)."""
        return self._task is not None and not self._task.done()

    @property
    def busy(self) -> bool:
        """Whether work spawned for the worker is under way."""
        return bool(self._background)

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name=f"upstream {self.name}")

    async def stop(self) -> None:
        """Stop reading, between two messages, and wait until it has."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    def cancel(self) -> None:
        """Stop reading, unless this is the reading task itself (it is ending anyway)."""
        if self._task is not None and self._task is not asyncio.current_task():
            self._task.cancel()

    def spawn(self, work: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _loop(self) -> None:
        why = EXITED
        try:
            await self._read()
        except ProtocolError as exc:
            why = f"worker sent bad DAP: {exc}"
        except (ConnectionError, OSError) as exc:
            why = f"connection lost: {exc}"
        except asyncio.CancelledError:
            why = ""
            raise
        finally:
            await self._ended(why)
