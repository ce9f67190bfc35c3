"""What a line typed at the prompt means: pdb's command names, aliases and help.

Like pdb: a known command name first, else Python (``!`` forces Python, for names such as
``c`` or ``n`` that are commands). Unlike pdb, ``c = 5`` is an assignment, not ``continue``:
a worker resuming by accident is worse than a surprise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Each command with its aliases, usage and one-line help, in pdb's words where pdb has them.
COMMANDS: dict[str, tuple[tuple[str, ...], str, str]] = {
    "help": (
        ("h",),
        "h(elp) [command]",
        "Without argument, list the commands; with one, help on it.",
    ),
    "where": (("w", "bt"), "w(here)", "Print a stack trace, most recent frame at the bottom."),
    "up": (
        ("u",),
        "u(p) [count]",
        "Move the current frame count (default one) levels up (to an older frame).",
    ),
    "down": (
        ("d",),
        "d(own) [count]",
        "Move the current frame count (default one) levels down (to a newer frame).",
    ),
    "step": (("s",), "s(tep)", "Execute the current line, stop at the first possible occasion."),
    "next": (
        ("n",),
        "n(ext)",
        "Continue until the next line in the current function is reached or it returns.",
    ),
    "return": (("r",), "r(eturn)", "Continue until the current function returns."),
    "continue": (
        ("c", "cont"),
        "c(ont(inue))",
        "Continue; stop only at a breakpoint. In a follow session, go on to the next "
        "paused worker.",
    ),
    "until": (
        ("unt",),
        "unt(il) [lineno]",
        "Without argument, continue until a line greater than the current one is reached; "
        "with a line number, until a line greater or equal to it.",
    ),
    "jump": (
        ("j",),
        "j(ump) lineno",
        "Set the next line that will be executed (where the worker allows it).",
    ),
    "break": (
        ("b",),
        "b(reak) [ ([filename:]lineno | function) [, condition] ]",
        "Set a breakpoint; without argument, list the breakpoints.",
    ),
    "tbreak": (
        (),
        "tbreak [ ([filename:]lineno | function) [, condition] ]",
        "A temporary breakpoint, removed when first hit.",
    ),
    "clear": (
        ("cl",),
        "cl(ear) [bpnumber [bpnumber...] | filename:lineno]",
        "Delete breakpoints; without argument, all of them (after confirmation).",
    ),
    "disable": ((), "disable bpnumber [bpnumber ...]", "Disable breakpoints."),
    "enable": ((), "enable bpnumber [bpnumber ...]", "Enable breakpoints."),
    "condition": (
        (),
        "condition bpnumber [condition]",
        "Set a condition for the breakpoint; without one, make it unconditional.",
    ),
    "ignore": (
        (),
        "ignore bpnumber [count]",
        "Ignore the breakpoint for the next count crossings.",
    ),
    "display": (
        (),
        "display [expression]",
        "Show the value of the expression at each stop where it changed; without argument, "
        "list them.",
    ),
    "undisplay": (
        (),
        "undisplay [expression]",
        "Stop displaying the expression; without argument, all of them.",
    ),
    "retval": (("rv",), "retval", "Print the return value of the last return of a function."),
    "args": (("a",), "a(rgs)", "Print the arguments of the current function."),
    "p": ((), "p expression", "Print the value of the expression."),
    "pp": ((), "pp expression", "Pretty-print the value of the expression."),
    "whatis": ((), "whatis expression", "Print the type of the expression."),
    "list": (
        ("l",),
        "l(ist) [first[, last] | .]",
        "List source code of the current file: 11 lines around the current line, then the next 11.",
    ),
    "longlist": (
        ("ll",),
        "ll | longlist",
        "List the whole source of the current function or frame.",
    ),
    "interact": (
        (),
        "interact",
        "Start an interactive interpreter in the current frame (Ctrl-D leaves it).",
    ),
    "workers": ((), "workers", "List the paused workers of this session; * marks the current one."),
    "worker": ((), "worker N", "Switch to paused worker N of the list `workers` prints."),
    "each": (
        (),
        "each expression",
        "Evaluate the expression in every paused worker, side by side.",
    ),
    "quit": (
        ("q", "exit"),
        "q(uit)",
        "Leave the debugger; the worker stays paused (`c` lets it run).",
    ),
}

_NAMES = {alias: name for name, (aliases, _, _) in COMMANDS.items() for alias in (name, *aliases)}
_WORD = re.compile(r"[A-Za-z_]+")
_ASSIGNMENT = re.compile(r"^(?:[-+*/%&|^@]|//|\*\*|>>|<<)?=(?!=)")


@dataclass(frozen=True)
class Line:
    """One parsed line: a command and its argument, or Python (``command`` is ``None``)."""

    command: str | None
    argument: str


def parse(line: str) -> Line:
    line = line.strip()
    if line.startswith("!"):
        return Line(None, line[1:].strip())
    word = _WORD.match(line)
    if word is None:
        return Line(None, line)
    name = _NAMES.get(word.group())
    rest = line[word.end() :]
    if name is None or (rest and not rest[0].isspace()):
        return Line(None, line)  # ``p(x)``, ``clear_cache()``: Python
    argument = rest.strip()
    if _ASSIGNMENT.match(argument):
        return Line(None, line)  # ``c = 5``
    return Line(name, argument)


def names() -> list[str]:
    """Every command name and alias, for completion."""
    return sorted(_NAMES)


def help_text(topic: str = "") -> str:
    if not topic:
        listed = sorted(COMMANDS)
        width = max(map(len, listed)) + 2
        rows = [listed[i : i + 6] for i in range(0, len(listed), 6)]
        table = "\n".join("".join(name.ljust(width) for name in row).rstrip() for row in rows)
        return (
            "Documented commands (type help <topic>):\n"
            "========================================\n"
            f"{table}\n\n"
            "Anything else is Python, run in the current frame (! forces it: !c = 1)."
        )
    name = _NAMES.get(topic)
    if name is None:
        return f"*** No help for {topic!r}"
    _, usage, text = COMMANDS[name]
    return f"{usage}\n        {text}"
