"""pdb's numbered breakpoints, kept by the client and sent as DAP requests.

DAP replaces all breakpoints of a file at once (``setBreakpoints``) and all function
breakpoints at once, so the table is the truth and every change re-sends what it touches.
Entries are immutable; the table swaps them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Breakpoint:
    number: int
    #: A line breakpoint's file, or where a function breakpoint's function starts.
    path: str
    line: int
    #: Set for a function breakpoint (``b func``): DAP stops on entering the function.
    function: str | None = None
    condition: str | None = None
    ignore: int = 0
    temporary: bool = False
    enabled: bool = True
    hits: int = 0

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    def to_dap(self) -> dict[str, Any]:
        spec: dict[str, Any] = {"name": self.function} if self.function else {"line": self.line}
        if self.condition:
            spec["condition"] = self.condition
        if self.ignore:
            spec["hitCondition"] = f">= {self.ignore + 1}"  # counted from when it is sent
        return spec


class BreakpointTable:
    def __init__(self) -> None:
        self._entries: dict[int, Breakpoint] = {}
        self._next = 1

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(sorted(self._entries.values(), key=lambda b: b.number))

    def __len__(self) -> int:
        return len(self._entries)

    def add(self, path: str, line: int, **options: Any) -> Breakpoint:
        entry = Breakpoint(self._next, path, line, **options)
        self._entries[entry.number] = entry
        self._next += 1
        return entry

    def get(self, number: int) -> Breakpoint | None:
        return self._entries.get(number)

    def change(self, number: int, **changes: Any) -> Breakpoint:
        entry = dataclasses.replace(self._entries[number], **changes)
        self._entries[number] = entry
        return entry

    def remove(self, number: int) -> Breakpoint:
        return self._entries.pop(number)

    def at(self, path: str, line: int) -> list[Breakpoint]:
        return [b for b in self if b.path == path and b.line == line and b.function is None]

    def hit(self, path: str, line: int, function: str) -> list[Breakpoint]:
        """The enabled breakpoints a stop at ``path:line`` in ``function`` was for."""

        def matches(b: Breakpoint) -> bool:
            return b.function == function if b.function else (b.path, b.line) == (path, line)

        return [b for b in self if b.enabled and matches(b)]

    def line_requests(self, path: str) -> dict[str, Any]:
        """``setBreakpoints`` arguments for one file: its enabled line breakpoints."""
        entries = [b for b in self if b.path == path and b.enabled and b.function is None]
        return {"source": {"path": path}, "breakpoints": [b.to_dap() for b in entries]}

    def function_requests(self) -> dict[str, Any]:
        entries = [b for b in self if b.enabled and b.function]
        return {"breakpoints": [b.to_dap() for b in entries]}

    def listing(self) -> str:
        """``b`` without argument, as pdb prints it."""
        lines = ["Num Type         Disp Enb   Where"]
        for b in self:
            disp = "del " if b.temporary else "keep"
            enabled = "yes" if b.enabled else "no "
            lines.append(f"{b.number:<3} breakpoint   {disp} {enabled}   at {b.where}")
            if b.condition:
                lines.append(f"\tstop only if {b.condition}")
            if b.ignore:
                lines.append(f"\tignore next {b.ignore} hits")
            if b.hits:
                lines.append(f"\tbreakpoint already hit {b.hits} time{'s' if b.hits > 1 else ''}")
        return "\n".join(lines)
