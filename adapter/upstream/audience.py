"""The client sessions attached to one worker's connection, and what they are all told: its
events, its closing, a line of output. A session that only looks is in the audience too, but
keeps nothing held (:attr:`Audience.debugged`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

from raydap.protocol import Event, event

#: The connection told of (:class:`~.connection.Upstream`), named by its clients' callbacks.
Worker = TypeVar("Worker")
Told = TypeVar("Told", contravariant=True)


class Client(Protocol[Told]):
    """An attached client session: it receives the worker's events."""

    #: Whether the session may debug; one that only looks holds nothing.
    debugs: bool

    def upstream_event(self, upstream: Told, message: Event) -> None: ...

    def upstream_closed(self, upstream: Told, reason: str) -> None: ...


class Audience(Generic[Worker]):
    """Who is told of one worker; ``on_change`` hears when that changes."""

    def __init__(self, worker: Worker, on_change: Callable[[], None]) -> None:
        self.worker = worker
        self.clients: set[Client[Worker]] = set()
        self._on_change = on_change

    @property
    def debugged(self) -> bool:
        """Whether a session that may debug it is attached: only such a session keeps a stop
        held or the worker's job counted as debugged; one that only looks changes nothing."""
        return any(client.debugs for client in self.clients)

    def add(self, client: Client[Worker]) -> None:
        self.clients.add(client)
        self._on_change()

    def remove(self, client: Client[Worker]) -> None:
        if client in self.clients:
            self.clients.discard(client)
            self._on_change()

    def tell(self, message: Event) -> None:
        for client in list(self.clients):
            client.upstream_event(self.worker, message)

    def say(self, text: str, category: str = "console") -> None:
        """Tell every client a line (an ``output`` event)."""
        self.tell(event("output", {"category": category, "output": text + "\n"}))

    def closed(self, reason: str) -> None:
        """Tell every client the worker is gone, and let them go (no ``on_change``: the
        closing connection says it changed once, after everything else)."""
        for client in list(self.clients):
            client.upstream_closed(self.worker, reason)
        self.clients.clear()
