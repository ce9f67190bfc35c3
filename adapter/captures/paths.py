"""Reading a captured value by a path expression: ``loss``, ``batch.shape``, ``cfg["lr"]``,
``xs[0]``. A lookup over what was captured (values as :mod:`raydap.live.capture_values` wrote
them), which runs nothing anywhere: so a capture answers ``evaluate`` even for a view token."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

from raydap.adapter.errors import Kind, WorkerError

#: The longest expression read over captures.
MAX_PATH = 200
#: What a captured tensor or array says of itself, read as attributes (``batch.shape``).
ARRAY_FIELDS = ("shape", "dtype", "device", "values")


def steps(expression: str) -> list[str]:
    """The names along a path expression; anything that would compute is refused."""
    if len(expression) > MAX_PATH:
        raise WorkerError(f"a path over captures is at most {MAX_PATH} characters", Kind.INVALID)
    try:
        node = ast.parse(expression.strip(), mode="eval").body
    except SyntaxError:
        raise WorkerError(
            f"not a path over captured values: {expression!r}", Kind.INVALID
        ) from None
    found: list[str] = []
    while True:
        if isinstance(node, ast.Name):
            found.append(node.id)
            return found[::-1]
        if isinstance(node, ast.Attribute):
            found.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            key = node.slice.value
            if not isinstance(key, str | int) or isinstance(key, bool):
                break
            found.append(str(key))
            node = node.value
        else:
            break
    raise WorkerError(
        "a capture is read, never run: use names, attributes and constant indexes "
        f"(loss, batch.shape, cfg['lr'], xs[0]), not {expression!r}",
        Kind.INVALID,
    )


def read_path(values: Sequence[Any], expression: str) -> dict[str, Any]:
    """The captured value at ``expression`` among ``values`` (a frame's captured locals)."""
    node: dict[str, Any] | None = None
    children: Sequence[Any] = values
    for step in steps(expression):
        if node is not None and step in ARRAY_FIELDS and step in node:  # a tensor's shape
            node = {"name": step, "type": "", "value": str(node[step])}
            children = []
            continue
        node = next((c for c in children if isinstance(c, dict) and c.get("name") == step), None)
        if node is None:
            where = "" if children is values else " in the captured value"
            raise WorkerError(f"{step!r} was not captured{where}", Kind.NOT_FOUND)
        children = node.get("children") or []
    assert node is not None  # steps() returns at least one name
    return node
