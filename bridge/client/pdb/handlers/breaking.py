"""Breakpoints, numbered as pdb numbers them (the table is in ``breakpoints``)."""

from __future__ import annotations

import re

from raydap.bridge.client.pdb import evaluation
from raydap.bridge.client.pdb.debugger import Debugger
from raydap.bridge.client.pdb.handlers.registry import STAY, Next, handles

_LOCATION = re.compile(r"^(?:(?P<file>.+?):)?(?P<line>\d+)$")


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
