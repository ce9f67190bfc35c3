"""What each pdb command does, over DAP: one coroutine per command, named as in ``commands``,
registered in ``registry``. Grouped by what they do: ``moving`` (the stack, stepping),
``breaking`` (breakpoints), ``looking`` (values and source), ``several`` (many workers).

A handler answers what the prompt does next: :data:`STAY` (ask for the next command),
:data:`RESUMED` (the worker runs: wait for a stop) or :data:`QUIT`.
"""

from __future__ import annotations

from raydap.bridge.client.pdb import commands
from raydap.bridge.client.pdb.debugger import Debugger
from raydap.bridge.client.pdb.handlers import breaking, looking, moving, several
from raydap.bridge.client.pdb.handlers.registry import HANDLERS, QUIT, RESUMED, STAY, Next

__all__ = ["HANDLERS", "QUIT", "RESUMED", "STAY", "Next", "dispatch"]
_REGISTERED = (breaking, looking, moving, several)  # importing them fills HANDLERS


async def dispatch(dbg: Debugger, line: commands.Line) -> Next:
    """Run one parsed line: its command's handler, or Python in the current frame."""
    if line.command is None:
        if line.argument:
            await dbg.run_python(line.argument)
        return STAY
    return await HANDLERS[line.command](dbg, line.argument)
