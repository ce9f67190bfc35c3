"""Looking at things: values, displays, arguments, return values, source."""

from __future__ import annotations

from collections.abc import Callable

from raydap.bridge.client.pdb import source
from raydap.bridge.client.pdb.debugger import Debugger
from raydap.bridge.client.pdb.handlers.registry import STAY, Next, handles


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


async def _list(
    dbg: Debugger, lines_to_show: Callable[[list[str], int, str], tuple[int, int] | None]
) -> None:
    """List the lines ``lines_to_show(lines, current line, function)`` picks, as pdb does."""
    lines = await dbg.lines(dbg.frame)
    path, current, function = dbg.where(dbg.frame)
    if lines is None:
        dbg.out(f"*** cannot read {path}")
        return
    shown = lines_to_show(lines, current, function)
    if shown is None:
        return
    breaks = [b.line for b in dbg.breakpoints if b.path == path and not b.function]
    dbg.out(source.listing(lines, *shown, current, breaks))


@handles("list")
async def do_list(dbg: Debugger, argument: str) -> Next:
    def around(lines: list[str], current: int, function: str) -> tuple[int, int] | None:
        if argument and argument != ".":
            try:
                numbers = [int(part) for part in argument.split(",")]
            except ValueError:
                dbg.out(f"*** Error in argument: {argument!r}")
                return None
            first = max(1, numbers[0] - 5) if len(numbers) == 1 else numbers[0]
            last = first + 10 if len(numbers) == 1 else numbers[1]
            last = first + last if last < first else last  # ``l 10, 3``: three lines from 10
        else:
            repeat = dbg.list_next is not None and argument != "."
            first = dbg.list_next if repeat and dbg.list_next else max(1, current - 5)
            last = first + 10
        if first > len(lines):
            dbg.out("[EOF]")
            return None
        dbg.list_next = min(last, len(lines)) + 1
        return first, last

    await _list(dbg, around)
    return STAY


@handles("longlist")
async def do_longlist(dbg: Debugger, argument: str) -> Next:
    await _list(dbg, lambda lines, current, function: source.function_range(
        "\n".join(lines), current, function))  # fmt: skip
    return STAY
