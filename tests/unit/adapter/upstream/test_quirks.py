"""What debugpy sends that clients must not see, mended on the way through."""

from __future__ import annotations

from raydap.adapter.upstream.quirks import mend_response
from raydap.protocol import Response


def _variables(*names: str) -> Response:
    listed = [{"name": n, "value": "None", "variablesReference": 0} for n in names]
    return Response(seq=1, request_seq=1, success=True, command="variables",
                    body={"variables": listed})  # fmt: skip


def test_the_return_value_of_rays_breakpoint_hook_is_left_out() -> None:
    mended = mend_response(_variables("x", "(return) set_trace", "y"))
    assert [v["name"] for v in mended.body["variables"]] == ["x", "y"]


def test_a_users_return_value_stays() -> None:
    mended = mend_response(_variables("(return) total_of", "total"))
    assert [v["name"] for v in mended.body["variables"]] == ["(return) total_of", "total"]


def test_an_error_without_body_gets_one() -> None:
    mended = mend_response(Response(seq=1, request_seq=1, success=False, command="evaluate",
                                    message="boom"))  # fmt: skip
    assert mended.body == {"error": {"id": 0, "format": "boom", "showUser": True}}
