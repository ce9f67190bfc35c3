"""What each pdb command does, over DAP. One coroutine per command, named as in ``commands``.

A handler answers what the prompt does next: :data:`STAY` (ask for the next command),
:data:`RESUMED` (the worker runs: wait for a stop) or :data:`QUIT`.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from enum import Enum
from typing import Any

from raydap.bridge.client.pdb import commands, evaluation, source
from raydap.bridge.client.pdb.debugger import Debugger


class Next(Enum):
    STAY = "stay"
    RESUMED = "resumed"
    QUIT = "quit"


STAY, RESUMED, QUIT = Next.STAY, Next.RESUMED, Next.QUIT
Handler = Callable[[Debugger, str], Awaitable[Next]]
HANDLERS: dict[str, Handler] = {}
_LOCATION = re.compile(r"^(?:(?P<file>.+?):)?(?P<line>\d+)$")


def handles(name: str) -> Callable[[Handler], Handler]:
    def register(function: Handler) -> Handler:
        HANDLERS[name] = function
        return function

    return register


async def dispatch(dbg: Debugger, line: commands.Line) -> Next:
    if line.command is None:
        if line.argument:
            await dbg.run_python(line.argument)
        return STAY
    return await HANDLERS[line.command](dbg, line.argument)


def _numbers(dbg: Debugger, argument: str) -> list[int]:
    """Breakpoint numbers, each checked as pdb does (errors printed, bad ones left out)."""
    found = []
    for word in argument.split():
        if not word.isdigit():
            dbg.out(f"*** Non-numeric breakpoint number {word}")
        elif dbg.breakpoints.get(int(word)) is None:
            dbg.out(f"*** Breakpoint {word} does not exist")
        else:
            found.append(int(word))
    return found


# -- moving around ----------------------------------------------------------------------------


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


async def _resume(dbg: Debugger, command: str, arguments: dict[str, Any] | None = None) -> Next:
    thread = dbg.current
    response = await dbg.client.request(
        command, {"threadId": thread, **(arguments or {})}, check=False
    )
    if not response.success:
        dbg.out(evaluation.error_line(response.message))
        return STAY
    dbg.paused.pop(thread or -1, None)
    return RESUMED


@handles("step")
async def do_step(dbg: Debugger, argument: str) -> Next:
    return await _resume(dbg, "stepIn")


@handles("next")
async def do_next(dbg: Debugger, argument: str) -> Next:
    return await _resume(dbg, "next")


@handles("return")
async def do_return(dbg: Debugger, argument: str) -> Next:
    return await _resume(dbg, "stepOut")


@handles("continue")
async def do_continue(dbg: Debugger, argument: str) -> Next:
    return await _resume(dbg, "continue")


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
        outcome = await _resume(dbg, "continue")
        if outcome is RESUMED:
            await dbg.wait_for_stop(dbg.current)
            await dbg.send_breakpoints(path)
        return STAY
    depth, thread = len(dbg.frames), dbg.current
    while True:
        if await _resume(dbg, "next") is not RESUMED:
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
    return await _resume(dbg, "goto", {"targetId": found[0]["id"]})


# -- breakpoints ------------------------------------------------------------------------------


async def _break(dbg: Debugger, argument: str, temporary: bool) -> Next:
    if not argument:
        if len(dbg.breakpoints):
            dbg.out(dbg.breakpoints.listing())
        return STAY
    spec, _, condition = (part.strip() for part in argument.partition(","))
    location = _LOCATION.match(spec)
    function: str | None = None
    if location:
        path = location["file"] or dbg.where(dbg.frame)[0]
        line = int(location["line"])
    else:
        found = await dbg.evaluate(
            f"(lambda f: (f.__code__.co_filename, f.__code__.co_firstlineno, f.__name__))"
            f"(getattr({spec}, '__func__', {spec}))"
        )
        try:
            path, line, function = evaluation.literal(found)
        except ValueError:
            dbg.out(f"*** The specified object {spec!r} is not a function or was not found.")
            return STAY
    entry = dbg.breakpoints.add(
        path, line, function=function, condition=condition or None, temporary=temporary
    )
    verdicts = await dbg.send_breakpoints(path, function=bool(function))
    mine = [b for b in dbg.breakpoints if (b.function is None) == (function is None)]
    mine = [b for b in mine if b.path == path] if function is None else mine
    verdict = next(
        (v for b, v in zip(mine, verdicts, strict=False) if b.number == entry.number), {}
    )
    kind = "Temporary breakpoint" if temporary else "Breakpoint"
    dbg.out(f"{kind} {entry.number} at {entry.where}")
    if verdict and not verdict.get("verified", True):
        dbg.out(
            f"*** not verified by the worker: {verdict.get('message') or 'no code at that line'}"
        )
    return STAY


@handles("break")
async def do_break(dbg: Debugger, argument: str) -> Next:
    return await _break(dbg, argument, temporary=False)


@handles("tbreak")
async def do_tbreak(dbg: Debugger, argument: str) -> Next:
    return await _break(dbg, argument, temporary=True)


async def _resend(dbg: Debugger, numbers: list[int]) -> None:
    for path, function in {
        (b.path, bool(b.function)) for b in map(dbg.breakpoints.get, numbers) if b
    }:
        await dbg.send_breakpoints(path, function=function)


@handles("clear")
async def do_clear(dbg: Debugger, argument: str) -> Next:
    if not argument:  # the console asked "Clear all breaks?" first, as pdb does
        numbers = [b.number for b in dbg.breakpoints]
    elif (location := _LOCATION.match(argument)) and location["file"]:
        numbers = [b.number for b in dbg.breakpoints.at(location["file"], int(location["line"]))]
        if not numbers:
            dbg.out(f"*** There is no breakpoint at {argument}")
    else:
        numbers = _numbers(dbg, argument)
    gone = [dbg.breakpoints.get(n) for n in numbers]
    for number in numbers:
        dbg.breakpoints.remove(number)
    for path, function in {(b.path, bool(b.function)) for b in gone if b}:
        await dbg.send_breakpoints(path, function=function)
    for entry in gone:
        if entry:
            dbg.out(f"Deleted breakpoint {entry.number} at {entry.where}")
    return STAY


async def _enable(dbg: Debugger, argument: str, enabled: bool) -> Next:
    numbers = _numbers(dbg, argument)
    for number in numbers:
        dbg.breakpoints.change(number, enabled=enabled)
    await _resend(dbg, numbers)
    for number in numbers:
        entry = dbg.breakpoints.get(number)
        assert entry is not None
        dbg.out(f"{'Enabled' if enabled else 'Disabled'} breakpoint {number} at {entry.where}")
    return STAY


@handles("enable")
async def do_enable(dbg: Debugger, argument: str) -> Next:
    return await _enable(dbg, argument, True)


@handles("disable")
async def do_disable(dbg: Debugger, argument: str) -> Next:
    return await _enable(dbg, argument, False)


@handles("condition")
async def do_condition(dbg: Debugger, argument: str) -> Next:
    number, _, condition = argument.partition(" ")
    numbers = _numbers(dbg, number)
    if not numbers:
        return STAY
    dbg.breakpoints.change(numbers[0], condition=condition.strip() or None)
    await _resend(dbg, numbers)
    if condition.strip():
        dbg.out(f"New condition set for breakpoint {number}.")
    else:
        dbg.out(f"Breakpoint {number} is now unconditional.")
    return STAY


@handles("ignore")
async def do_ignore(dbg: Debugger, argument: str) -> Next:
    number, _, count_text = argument.partition(" ")
    numbers = _numbers(dbg, number)
    if not numbers:
        return STAY
    try:
        count = max(0, int(count_text.strip() or 0))
    except ValueError:
        dbg.out(f"*** Error in argument: {count_text!r}")
        return STAY
    dbg.breakpoints.change(numbers[0], ignore=count)
    await _resend(dbg, numbers)
    if count:
        crossings = "next crossing" if count == 1 else f"next {count} crossings"
        dbg.out(f"Will ignore {crossings} of breakpoint {number}.")
    else:
        dbg.out(f"Will stop next time breakpoint {number} is reached.")
    return STAY


# -- looking at things ------------------------------------------------------------------------


async def _print(dbg: Debugger, argument: str, how: str) -> Next:
    if not argument:
        dbg.out(f"*** Argument expected: {'pp' if how == 'pformat' else 'p'} expression")
        return STAY
    value = await dbg.show(argument, how)
    if value is not None:
        dbg.out(value)
    return STAY


@handles("p")
async def do_p(dbg: Debugger, argument: str) -> Next:
    return await _print(dbg, argument, "repr")


@handles("pp")
async def do_pp(dbg: Debugger, argument: str) -> Next:
    return await _print(dbg, argument, "pformat")


@handles("whatis")
async def do_whatis(dbg: Debugger, argument: str) -> Next:
    return await _print(dbg, argument, "type")


@handles("display")
async def do_display(dbg: Debugger, argument: str) -> Next:
    if not argument:
        dbg.out("Currently displaying:")
        for expression in dbg.displays:
            dbg.out(f"{expression}: {await dbg.show(expression)}")
        return STAY
    value = await dbg.show(argument)
    if value is not None:
        dbg.displays[argument] = value
        dbg.out(f"display {argument}: {value}")
    return STAY


@handles("undisplay")
async def do_undisplay(dbg: Debugger, argument: str) -> Next:
    if not argument:
        dbg.displays.clear()
    elif dbg.displays.pop(argument, None) is None:
        dbg.out(f"*** not displaying {argument}")
    return STAY


@handles("args")
async def do_args(dbg: Debugger, argument: str) -> Next:
    _, line, function = dbg.where(dbg.frame)
    lines = await dbg.lines(dbg.frame)
    for name in source.parameters("\n".join(lines or []), line, function):
        value = await dbg.show(name)
        if value is not None:
            dbg.out(f"{name} = {value}")
    return STAY


@handles("retval")
async def do_retval(dbg: Debugger, argument: str) -> Next:
    scopes = await dbg.client.request("scopes", {"frameId": dbg.frame["id"]}, check=False)
    for scope in (scopes.body or {}).get("scopes", []) if scopes.success else []:
        listed = await dbg.client.request(
            "variables", {"variablesReference": scope["variablesReference"]}, check=False
        )
        for variable in (listed.body or {}).get("variables", []) if listed.success else []:
            if str(variable.get("name", "")).startswith("(return)"):
                dbg.out(str(variable.get("value")))
                return STAY
    dbg.out("*** Not yet returned!")
    return STAY


@handles("list")
async def do_list(dbg: Debugger, argument: str) -> Next:
    lines = await dbg.lines(dbg.frame)
    path, current, _ = dbg.where(dbg.frame)
    if lines is None:
        dbg.out(f"*** cannot read {path}")
        return STAY
    if argument and argument != ".":
        try:
            numbers = [int(part) for part in argument.split(",")]
        except ValueError:
            dbg.out(f"*** Error in argument: {argument!r}")
            return STAY
        first = max(1, numbers[0] - 5) if len(numbers) == 1 else numbers[0]
        last = first + 10 if len(numbers) == 1 else numbers[1]
        last = first + last if last < first else last  # ``l 10, 3``: three lines from 10
    elif dbg.list_next is None or argument == ".":
        first = max(1, current - 5)
        last = first + 10
    else:
        first = dbg.list_next
        last = first + 10
    if first > len(lines):
        dbg.out("[EOF]")
        return STAY
    breaks = [b.line for b in dbg.breakpoints if b.path == path and not b.function]
    dbg.out(source.listing(lines, first, last, current, breaks))
    dbg.list_next = min(last, len(lines)) + 1
    return STAY


@handles("longlist")
async def do_longlist(dbg: Debugger, argument: str) -> Next:
    lines = await dbg.lines(dbg.frame)
    path, current, function = dbg.where(dbg.frame)
    if lines is None:
        dbg.out(f"*** cannot read {path}")
        return STAY
    first, last = source.function_range("\n".join(lines), current, function)
    breaks = [b.line for b in dbg.breakpoints if b.path == path and not b.function]
    dbg.out(source.listing(lines, first, last, current, breaks))
    return STAY


# -- several workers --------------------------------------------------------------------------


@handles("workers")
async def do_workers(dbg: Debugger, argument: str) -> Next:
    dbg.drain()
    await dbg.live_threads()
    for number, thread in enumerate(dbg.paused, 1):
        mark = "*" if thread == dbg.current else " "
        dbg.out(f"{mark} {number}  {dbg.worker_label(thread)}  ({dbg.paused[thread].reason})")
    return STAY


@handles("worker")
async def do_worker(dbg: Debugger, argument: str) -> Next:
    dbg.drain()
    threads = list(dbg.paused)
    if not argument.isdigit() or not 1 <= int(argument) <= len(threads):
        dbg.out(f"*** No paused worker {argument!r}: `workers` lists them")
        return STAY
    await dbg.select(threads[int(argument) - 1])
    return STAY


@handles("each")
async def do_each(dbg: Debugger, argument: str) -> Next:
    if not argument:
        dbg.out("*** Argument expected: each expression")
        return STAY
    dbg.drain()
    await dbg.live_threads()

    async def one(thread: int) -> str:
        trace = await dbg.client.request(
            "stackTrace", {"threadId": thread, "levels": 1}, check=False
        )
        frames = (trace.body or {}).get("stackFrames", []) if trace.success else []
        if not frames:
            return "*** not paused"
        answer = await dbg.client.request(
            "evaluate",
            {"expression": evaluation.shown(argument), "frameId": frames[0]["id"],
             "context": "repl"},
            check=False,
        )  # fmt: skip
        if not answer.success:
            return evaluation.error_line(answer.message)
        result = str((answer.body or {}).get("result", ""))
        return evaluation.decode(result) or result

    threads = list(dbg.paused)
    values = await asyncio.gather(*(one(thread) for thread in threads))
    width = max((len(dbg.worker_label(t)) for t in threads), default=0)
    for thread, value in zip(threads, values, strict=True):
        dbg.out(f"{dbg.worker_label(thread).ljust(width)}  {value}")
    return STAY
