"""What agents are shown: schemas they can read, and only the reading tools for view tokens."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from raydap.bridge.mcp import catalog
from raydap.bridge.mcp.server import offered
from raydap.bridge.server.auth import Token

VIEW = Token("bob", "view", "x" * 20)
DEBUG = Token("alice", "debug", "y" * 20)


def test_every_tool_has_a_self_contained_object_schema_and_words() -> None:
    for tool in catalog.TOOLS:
        schema = tool.input_schema()
        assert schema["type"] == "object", tool.name
        assert "$ref" not in json.dumps(schema) and "$defs" not in schema, tool.name
        assert len(tool.description) > 60, tool.name
    evaluate = catalog.BY_NAME["evaluate"].input_schema()
    assert set(evaluate["properties"]["filter"]["properties"]) == {
        "job",
        "task",
        "actor",
        "node",
        "ranks",
    }
    assert evaluate["required"] == ["expression"]


def test_a_view_token_is_offered_only_what_reads() -> None:
    assert {t.name for t in offered(VIEW)} == {
        "list_workers", "stacks", "hangs", "source", "variables", "wait_for_pause",
        "list_captures", "read_capture",
    }  # fmt: skip
    assert [t.name for t in offered(DEBUG)] == [t.name for t in catalog.TOOLS]
    assert len(catalog.TOOLS) == 16


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("source", {}),  # which worker is required
        ("source", {"worker": "../etc"}),
        ("wait_for_pause", {"timeout_s": catalog.MAX_WAIT_S + 1}),
        ("set_breakpoints", {"path": "a.py", "lines": []}),
        ("step", {"worker": "ab12", "kind": "sideways"}),
        ("list_workers", {"filter": {"rank": 3}}),
        ("evaluate", {"expression": "x", "unknown": 1}),
        ("evaluate", {"expression": "x", "worker": "ab12", "filter": {"job": "02000000"}}),
        ("continue_workers", {"worker": "ab12", "filter": {"task": "train*"}}),
        ("set_breakpoints", {"path": "train.py", "lines": [3]}),  # relative: whose?
        ("set_breakpoints", {"path": "/a/train.py", "lines": [0]}),
        ("read_capture", {}),  # a capture, or a point with an expression
        ("read_capture", {"point": "cp-0123456789"}),
        ("read_capture", {"capture": "cap-01", "point": "cp-0123456789", "expression": "x"}),
        ("clear_capture_point", {"point": "../../etc"}),
        ("set_capture_point", {"path": "/a.py", "line": 3, "most": 0}),
        ("clear_breakpoints", {"path": "../train.py"}),
        ("set_breakpoints", {"path": "/a.py", "lines": [3], "ranks": "tp=1"}),  # of which job?
        ("set_breakpoints", {"path": "/a.py", "lines": [3], "job": "02", "ranks": "tp=(1"}),
        ("clear_breakpoints", {"path": "/a.py", "job": "02", "ranks": "1-0"}),
    ],
)
def test_arguments_outside_the_schema_are_refused(tool: str, arguments: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        catalog.BY_NAME[tool].arguments.model_validate(arguments)


def test_windows_paths_and_one_worker_alone_are_fine() -> None:
    catalog.BY_NAME["set_breakpoints"].arguments.model_validate(
        {"path": "C:\\jobs\\train.py", "lines": [3]}
    )
    catalog.BY_NAME["evaluate"].arguments.model_validate({"expression": "x", "worker": "ab12"})
