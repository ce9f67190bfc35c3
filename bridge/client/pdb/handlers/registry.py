"""The table of command handlers, and what a handler answers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from enum import Enum

from raydap.bridge.client.pdb.debugger import Debugger


class Next(Enum):
    """What the prompt does after a command."""

    STAY = "stay"
    RESUMED = "resumed"
    QUIT = "quit"


STAY, RESUMED, QUIT = Next.STAY, Next.RESUMED, Next.QUIT
Handler = Callable[[Debugger, str], Awaitable[Next]]
HANDLERS: dict[str, Handler] = {}


def handles(name: str) -> Callable[[Handler], Handler]:
    def register(function: Handler) -> Handler:
        HANDLERS[name] = function
        return function

    return register
