"""Text from a job reaching the operator's terminal, with its control characters shown escaped.

A job controls much of what raydap prints: exception messages, task and key names, paths, the
reasons a capture point gave. An escape sequence in any of them would reach the terminal and act
there (an OSC 52 clipboard write was seen getting through), so every ``raydap`` command writes
through :class:`Escaped`: control characters (C0 but newline and tab, DEL, C1) and the Unicode
controls that reorder text become ``\\x1b``-style escapes. raydap's own sequences (clearing the
screen for ``--watch``) go through :func:`control`, past the escaping.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any, TextIO

#: Bidirectional overrides and isolates: they reorder what a terminal shows ("Trojan Source").
_REORDERING = [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_ESCAPES = {
    code: f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
    for code in (*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0), *_REORDERING)
    if code not in (0x0A, 0x09)
}


def shown(text: str) -> str:
    """``text`` as it may reach a terminal: control characters escaped, newlines, tabs and
    line ends of a carriage return and a newline kept (a legacy pdb's socket sends those); a
    lone carriage return, which could write over what a line said, is escaped."""
    escaped = text.translate(_ESCAPES)
    return escaped.replace("\\x0d\n", "\r\n") if "\r" in text else escaped


class Escaped:
    """A text stream that writes through :func:`shown` (everything else is the stream's own)."""

    def __init__(self, stream: TextIO) -> None:
        self.raw = stream

    def write(self, text: str) -> int:
        self.raw.write(shown(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:  # flush, fileno, isatty, buffer, encoding ...
        return getattr(self.raw, name)


@contextlib.contextmanager
def escaped() -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` escaped while a command runs."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = Escaped(saved[0]), Escaped(saved[1])
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def control(sequence: str) -> None:
    """One of raydap's own terminal sequences, written as it is."""
    stream = sys.stdout
    target = stream.raw if isinstance(stream, Escaped) else stream
    target.write(sequence)
