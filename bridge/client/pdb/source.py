"""Source lines as pdb prints them: where a frame stopped, and ``list``/``longlist``."""

from __future__ import annotations

import ast
from collections.abc import Collection, Sequence


def location(path: str, line: int, function: str) -> str:
    """``/path/file.py(13)func()``: pdb's name for where a frame is."""
    return f"{path}({line}){function}()"


def current_line(lines: Sequence[str] | None, line: int) -> str:
    """``-> source line``, or nothing when the source cannot be read."""
    if lines is None or not 1 <= line <= len(lines):
        return ""
    return "-> " + lines[line - 1].strip()


def listing(
    lines: Sequence[str], first: int, last: int, current: int, breaks: Collection[int] = ()
) -> str:
    """Lines ``first`` to ``last``, numbered, ``B`` where a breakpoint is, ``->`` at the
    current line (pdb's ``_print_lines``)."""
    out = []
    for number in range(max(1, first), min(last, len(lines)) + 1):
        mark = str(number).rjust(3).ljust(4) + ("B" if number in breaks else " ")
        if number == current:
            mark += "->"
        out.append(f"{mark}\t{lines[number - 1].rstrip()}")
    return "\n".join(out)


def function_range(text: str, line: int, function: str) -> tuple[int, int]:
    """The lines of the function named ``function`` that holds ``line`` (from its first
    decorator), or of the whole file for module code, as ``longlist`` shows them."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return 1, len(text.splitlines())
    best: tuple[int, int] | None = None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == function:
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            end = node.end_lineno or node.lineno
            if start <= line <= end and (best is None or start >= best[0]):
                best = (start, end)
    return best or (1, len(text.splitlines()))


def parameters(text: str, line: int, function: str) -> list[str]:
    """The parameter names of that function, in order (for ``args``)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or node.name != function:
            continue
        if node.lineno <= line <= (node.end_lineno or 0):
            a = node.args  # in the order of co_varnames, as pdb prints them
            names = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
            names += [a.vararg.arg] if a.vararg else []
            names += [a.kwarg.arg] if a.kwarg else []
            return names
    return []
