"""The records' JSON schema, as the VS Code extension's tests read it.

The extension parses records field by field (``vscode-ext/src/records.ts``); its unit test
``recordSchema.test.ts`` builds a record from this schema and fails on a field or state it
neither reads nor names as ignored. This test keeps the schema file equal to the model, so a
field or state added in Python reaches that check. To write the file again after a change:
``RAYDAP_WRITE_SCHEMA=1 pytest tests/unit/bridge/workers/test_record_schema.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from raydap.bridge.workers.records import BreakpointRecord

SCHEMA = Path(__file__).parents[4] / "vscode-ext" / "test" / "schema" / "record.schema.json"


def structure(schema: Any) -> Any:
    """The schema without its titles and descriptions: a docstring is not a change."""
    if isinstance(schema, dict):
        return {k: structure(v) for k, v in schema.items() if k not in ("title", "description")}
    if isinstance(schema, list):
        return [structure(item) for item in schema]
    return schema


def current() -> str:
    schema = structure(BreakpointRecord.model_json_schema(mode="serialization"))
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def test_the_extensions_copy_of_the_record_schema_is_the_models() -> None:
    if os.environ.get("RAYDAP_WRITE_SCHEMA") == "1":
        SCHEMA.write_text(current())
    assert SCHEMA.read_text() == current(), (
        f"{SCHEMA} differs from BreakpointRecord: write it again with "
        "RAYDAP_WRITE_SCHEMA=1 pytest tests/unit/bridge/workers/test_record_schema.py, "
        "then make the extension read (or name as ignored) what changed"
    )
