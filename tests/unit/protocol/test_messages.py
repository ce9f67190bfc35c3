import json
from pathlib import Path

import pytest

from raydap.protocol import Request, error_response, event, response_to
from tests.dap_schema import SHARED, VENDORED, schema_errors


def test_error_response_is_schema_valid_and_readable() -> None:
    wire = error_response(5, "attach", "no paused worker with id 'ab'").to_dict(seq=1)
    assert schema_errors(wire) == []
    assert wire["message"] == "no paused worker with id 'ab'"
    assert wire["body"]["error"]["format"] == "no paused worker with id 'ab'"


def test_response_to_answers_the_request() -> None:
    request = Request(seq=9, command="threads")
    wire = response_to(request, {"threads": []}).to_dict(seq=2)
    assert wire == {
        "seq": 2,
        "type": "response",
        "request_seq": 9,
        "success": True,
        "command": "threads",
        "body": {"threads": []},
    }
    assert schema_errors(wire) == []


def test_event_without_body_leaves_it_out() -> None:
    assert event("initialized").to_dict(seq=3) == {
        "seq": 3,
        "type": "event",
        "event": "initialized",
    }


def test_schema_check_catches_a_broken_message() -> None:
    broken = {"seq": 1, "type": "event", "event": "stopped", "body": {}}
    assert any("reason" in error for error in schema_errors(broken))


@pytest.mark.skipif(not SHARED.exists(), reason="no ../shared beside this checkout")
def test_vendored_schema_matches_the_shared_one() -> None:
    assert json.loads(Path(SHARED).read_text()) == json.loads(VENDORED.read_text())
