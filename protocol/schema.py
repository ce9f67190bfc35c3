"""Request arguments checked against the official DAP JSON schema before they reach a worker.

debugpy trusts its one client: a ``setBreakpoints`` whose ``source.path`` is a number, or whose
``breakpoints`` is a string, raises inside pydevd and closes the worker's debug connection, for
every session that shares it. The bridge has many clients, some hostile or buggy, so what it
forwards must at least have the shape the protocol promises. The schema
(``debugAdapterProtocol.json``, MIT, Microsoft) ships with the package.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import fastjsonschema

SCHEMA = Path(__file__).with_name("debugAdapterProtocol.json")


@cache
def definitions() -> dict[str, Any]:
    """The schema's definitions, read once."""
    return dict(json.loads(SCHEMA.read_text())["definitions"])


@cache
def _validator(command: str) -> Callable[[Any], Any] | None:
    """The compiled check of one command's arguments (compiled once: about a microsecond a
    request, which every request to a worker pays)."""
    name = command[:1].upper() + command[1:] + "Arguments"
    if name not in definitions():
        return None
    schema = {"$ref": f"#/definitions/{name}", "definitions": definitions()}
    return fastjsonschema.compile(schema)


def argument_problem(command: str, arguments: Any) -> str | None:
    """Why ``arguments`` are not what the schema says ``command`` takes, or None if they are
    (or the schema does not know the command)."""
    validate = _validator(command)
    if validate is None:
        return None
    try:
        validate({} if arguments is None else arguments)
    except fastjsonschema.JsonSchemaValueException as exc:
        where = ".".join(str(part) for part in exc.path[1:]) or "arguments"
        problem = exc.message.split(" ", 1)[-1]  # "data.source.path must be string"
        return f"bad {command!r} arguments: {where}: {problem[:200]}"
    return None
