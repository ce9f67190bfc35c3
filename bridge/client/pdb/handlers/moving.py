"""Moving around: help and quit, the stack, stepping and running."""

from __future__ import annotations

from typing import Any

from raydap.bridge.client.pdb import commands, evaluation
from raydap.bridge.client.pdb.debugger import Debugger
from raydap.bridge.client.pdb.handlers.registry import QUIT, RESUMED, STAY, Handler, Next, handles


@handles("help")
async def do_help(dbg: Debugger, argument: str) -> Next:
    dbg.out(commands.help_text(argument))
    return STAY


@handles("quit")
async def do_quit(dbg: Debugger, argument: str) -> Next:
    return QUIT


@handles("where")
async def do_where(dbg: Debugger, argument: str) -> Next:
    for position in reversed(range(len(dbg.frames))):
        await dbg.show_frame(dbg.frames[position], "> " if position == dbg.index else "  ")
    return STAY


async def _move(dbg: Debugger, argument: str, direction: int) -> Next:
    try:
        count = int(argument or 1)
    except ValueError:
        dbg.out(f"*** Invalid frame count ({argument})")
        return STAY
    target = dbg.index + direction * count
    if target >= len(dbg.frames) and dbg.index == len(dbg.frames) - 1:
        dbg.out("*** Oldest frame")
    elif target < 0 and dbg.index == 0:
        dbg.out("*** Newest frame")
    else:
        dbg.index = max(0, min(len(dbg.frames) - 1, target))
        dbg.list_next = None
        await dbg.show_frame()
    return STAY


@handles("up")
async def do_up(dbg: Debugger, argument: str) -> Next:
    return await _move(dbg, argument, +1)


@handles("down")
async def do_down(dbg: Debugger, argument: str) -> Next:
    return await _move(dbg, argument, -1)


async def resume(dbg: Debugger, command: str, arguments: dict[str, Any] | None = None) -> Next:
    thread = dbg.current
    response = await dbg.client.request(
        command, {"threadId": thread, **(arguments or {})}, check=False
    )
    if not response.success:
        dbg.out(evaluation.error_line(response.message))
        return STAY
    dbg.paused.pop(thread or -1, None)
    return RESUMED


def _resumes(dap_command: str) -> Handler:
    async def handler(dbg: Debugger, argument: str) -> Next:
        return await resume(dbg, dap_command)

    return handler


for _name, _dap_command in (
    ("step", "stepIn"), ("next", "next"), ("return", "stepOut"), ("continue", "continue"),
):  # fmt: skip
    handles(_name)(_resumes(_dap_command))


@handles("until")
async def do_until(dbg: Debugger, argument: str) -> Next:
    """With a line: run to it (or to any breakpoint). Without: ``next`` until a line after
    this one, so a loop runs to its end."""
    path, start, _ = dbg.where(dbg.frames[0])
    if dbg.index:
        dbg.out("*** until works in the newest frame here (use d to go there)")
        return STAY
    if argument:
        if not argument.isdigit():
            dbg.out(f"*** Error in argument: {argument!r}")
            return STAY
        if int(argument) <= start:
            dbg.out('*** "until" line number is smaller than current line number')
            return STAY
        await dbg.send_breakpoints(path, extra=(int(argument),))
        outcome = await resume(dbg, "continue")
        if outcome is RESUMED:
            await dbg.wait_for_stop(dbg.current)
            await dbg.send_breakpoints(path)
        return STAY
    depth, thread = len(dbg.frames), dbg.current
    while True:
        if await resume(dbg, "next") is not RESUMED:
            return STAY
        await dbg.wait_for_stop(thread, show=False)
        line = dbg.where(dbg.frames[0])[1]
        returned = len(dbg.frames) < depth
        if dbg.current != thread or returned or (len(dbg.frames) == depth and line > start):
            await dbg.show_stop()
            return STAY


@handles("jump")
async def do_jump(dbg: Debugger, argument: str) -> Next:
    if dbg.index:
        dbg.out("*** You can only jump within the bottom frame")
        return STAY
    if not argument.isdigit():
        dbg.out("*** The 'jump' command requires a line number")
        return STAY
    path = dbg.where(dbg.frame)[0]
    targets = await dbg.client.request(
        "gotoTargets", {"source": {"path": path}, "line": int(argument)}, check=False
    )
    found = (targets.body or {}).get("targets", []) if targets.success else []
    if not found:
        dbg.out(f"*** Jump failed: cannot jump to line {argument} here")
        return STAY
    return await resume(dbg, "goto", {"targetId": found[0]["id"]})
