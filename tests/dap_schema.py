"""Validation of DAP messages against the official JSON schema (MIT, Microsoft).

The schema is the one in ``../shared/dap/`` when this checkout sits beside it, else the copy the
package ships in ``protocol/`` (kept identical: tests/unit/protocol/test_messages.py).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent.parent / "shared" / "dap" / "debugAdapterProtocol.json"
VENDORED = HERE.parent / "protocol" / "debugAdapterProtocol.json"


@cache
def _schema() -> dict[str, Any]:
    path = SHARED if SHARED.exists() else VENDORED
    return dict(json.loads(path.read_text()))


@cache
def _validator(definition: str) -> jsonschema.Draft7Validator:
    schema = _schema()
    return jsonschema.Draft7Validator(
        {"$ref": f"#/definitions/{definition}", "definitions": schema["definitions"]}
    )


def definition_for(message: dict[str, Any]) -> str:
    """The schema definition a message must satisfy: its specific one where the schema has
    it (``StoppedEvent``, ``ContinueResponse`` ...), else the generic envelope."""
    definitions = _schema()["definitions"]
    kind = message.get("type")
    if kind == "response":
        if not message.get("success"):
            return "ErrorResponse"
        name = str(message.get("command", ""))
        specific = name[:1].upper() + name[1:] + "Response"
        return specific if specific in definitions else "Response"
    if kind == "event":
        name = str(message.get("event", ""))
        specific = name[:1].upper() + name[1:] + "Event"
        return specific if specific in definitions else "Event"
    name = str(message.get("command", ""))
    specific = name[:1].upper() + name[1:] + "Request"
    return specific if specific in definitions else "Request"


def schema_errors(message: dict[str, Any]) -> list[str]:
    """Why ``message`` is not valid DAP (empty when it is)."""
    definition = definition_for(message)
    return [
        f"{definition}: {'/'.join(map(str, e.absolute_path)) or '.'}: {e.message}"
        for e in _validator(definition).iter_errors(message)
    ]
