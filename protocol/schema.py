"""Request arguments checked against the official DAP JSON schema before they reach a worker.

debugpy trusts its one client: a ``setBreakpoints`` whose ``source.path`` is a number, or whose
``breakpoints`` is a string, raises inside pydevd and closes the worker's debug connection, for
every session that shares it. The bridge has many clients, some hostile or buggy, so what it
forwards must at least have the shape the protocol promises. The schema
(``debugAdapterProtocol.json``, MIT, Microsoft) ships with the package.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft7Validator
from jsonschema.exceptions import best_match

SCHEMA = Path(__file__).with_name("debugAdapterProtocol.json")


@cache
def definitions() -> dict[str, Any]:
    """The schema's definitions, read once."""
    return dict(json.loads(SCHEMA.read_text())["definitions"])


@cache
def _validator(command: str) -> Draft7Validator | None:
    name = command[:1].upper() + command[1:] + "Arguments"
    if name not in definitions():
        return None
    return Draft7Validator({"$ref": f"#/definitions/{name}", "definitions": definitions()})


def argument_problem(command: str, arguments: Any) -> str | None:
    """Why ``arguments`` are not what the schema says ``command`` takes, or None if they are
    (or the schema does not know the command)."""
    validator = _validator(command)
    if validator is None:
        return None
    error = best_match(validator.iter_errors({} if arguments is None else arguments))
    if error is None:
        return None
    where = ".".join(str(part) for part in error.absolute_path) or "arguments"
    return f"bad {command!r} arguments: {where}: {error.message[:200]}"
