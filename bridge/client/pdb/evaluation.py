"""Python typed at the prompt, as the worker should run it and as pdb shows the answer.

debugpy's ``evaluate`` shows values its own way (abridged containers, nothing for ``None``)
and answers errors with its internal traceback. pdb prints ``repr`` in full, echoes the value
of each expression statement, and prints an error as one line. So expressions are wrapped to
return the exact text, statements are split so each expression among them is echoed, and
errors are cut to their last line.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from raydap.adapter.upstream.quirks import exception_line

_BUILTINS = "__import__('builtins')"


def shown(expression: str, how: str = "repr") -> str:
    """An expression whose value is the text pdb prints for ``expression``: its ``repr``
    (``p``), ``pprint.pformat`` (``pp``), ``type`` (``whatis``) or, for ``echo``, the
    ``repr`` unless the value is ``None``. Evaluate it in the ``repl`` context (answers
    errors as errors; texts up to 64 KiB whole) and decode the answer with :func:`decode`."""
    format_ = {
        "repr": f"{_BUILTINS}.repr(v)",
        "pformat": "__import__('pprint').pformat(v)",
        "type": f"{_BUILTINS}.repr({_BUILTINS}.type(v))",
        "echo": f"'' if v is None else {_BUILTINS}.repr(v)",
    }[how]
    return f"(lambda v: {format_})(({expression}\n))"


def decode(result: str) -> str | None:
    """The text of a ``str`` as debugpy shows it (its ``repr``); ``None`` if it is not one."""
    try:
        value = ast.literal_eval(result)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, str) else None


def literal(result: str | None) -> tuple[Any, ...]:
    """A tuple the worker answered (its ``repr``); :class:`ValueError` if it is not one."""
    if result is None:
        raise ValueError("no answer")
    try:
        value = ast.literal_eval(result)
    except SyntaxError:
        raise ValueError(result) from None
    if not isinstance(value, tuple):
        raise ValueError(result)
    return value


def error_line(message: str | None) -> str:
    """``*** NameError: name 'x' is not defined``, as pdb prints an error."""
    return "*** " + (exception_line(message) or "error")


@dataclass(frozen=True)
class Piece:
    """One statement of a line: run it, and echo its value if it is an expression."""

    source: str
    is_expression: bool


def split(source: str) -> list[Piece]:
    """The statements of ``source`` in order (``import os; os.getpid()`` is two). Raises
    :class:`SyntaxError` as pdb would report it, before anything reaches the worker."""
    tree = ast.parse(source, "<stdin>", "exec")
    pieces = []
    for statement in tree.body:
        text = ast.get_source_segment(source, statement, padded=True) or ""
        pieces.append(Piece(text.strip(), isinstance(statement, ast.Expr)))
    return pieces


def syntax_error(exc: SyntaxError) -> str:
    return f"*** SyntaxError: {exc.msg}"
