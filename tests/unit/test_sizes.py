"""What a reader holds at once: no module of the package over 500 lines, no class over 300
(from its ``class`` line to its last). One that grows past is divided by role, as
docs/architecture.md's rooms are, not trimmed of its docstrings."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.unit.test_layers import modules

MAX_MODULE_LINES = 500
MAX_CLASS_LINES = 300


def sizes(path: Path) -> tuple[int, dict[str, int]]:
    """A module's lines, and each of its classes' (nested ones by their dotted names)."""
    text = path.read_text()
    classes: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                assert child.end_lineno is not None
                classes[prefix + child.name] = child.end_lineno - child.lineno + 1
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(text), "")
    return len(text.splitlines()), classes


def test_no_module_or_class_is_larger_than_a_reader_holds() -> None:
    over = []
    for name, path in sorted(modules().items()):
        lines, classes = sizes(path)
        if lines > MAX_MODULE_LINES:
            over.append(f"{name}: {lines} lines")
        over += [f"{name}.{c}: {n} lines" for c, n in classes.items() if n > MAX_CLASS_LINES]
    assert not over, f"over {MAX_MODULE_LINES} lines a module, {MAX_CLASS_LINES} a class: {over}"


def test_a_class_is_counted_from_its_class_line_to_its_last(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text('"""Doc."""\n\n\nclass A:\n    class B:\n        x = 1\n\n    y = 2\n')
    assert sizes(source) == (8, {"A": 5, "A.B": 2})
