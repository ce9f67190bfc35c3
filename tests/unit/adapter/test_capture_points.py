"""Capture points as breakpoints: one id for one point whoever sets it, settings kept when a
list is sent again, limits a client cannot break, and a worker breakpoint that never stops."""

from __future__ import annotations

import ast
import json

from raydap.adapter import bridge_capabilities
from raydap.adapter.capture_points import DEFAULTS, for_worker, point_id, tag


def test_the_bridge_offers_the_capture_mode() -> None:
    modes = bridge_capabilities(None)["breakpointModes"]

    assert modes == [{**modes[0], "mode": "capture", "label": "Capture (no stop)"}]
    assert modes[0]["appliesTo"] == ["source"]


def test_a_point_keeps_its_id_and_expiry_when_its_list_is_sent_again() -> None:
    point = {"line": 12, "mode": "capture", "condition": "step % 10 == 0"}
    plain = {"line": 20}

    first = tag("/job/train.py", [point])
    again = tag("/job/train.py", [plain, point], before=first)

    assert again[0] == plain  # a plain breakpoint is left as it is
    assert again[1]["capture"] == first[0]["capture"]
    assert first[0]["capture"]["id"] == point_id("/job/train.py", point)
    assert point_id("/job/other.py", point) != point_id("/job/train.py", point)
    assert {k: first[0]["capture"][k] for k in DEFAULTS} == DEFAULTS
    assert "capture" not in point  # the client's object is not changed


def test_limits_a_client_asks_are_kept_and_nonsense_is_dropped() -> None:
    limits = {"interval": 0.5, "most": "all", "rank": 2, "job": 7, "budget_ms": -1}
    asked = {"line": 3, "mode": "capture", "capture": limits}

    settings = tag("/a.py", [asked])[0]["capture"]

    assert settings["interval"] == 0.5 and settings["rank"] == 2
    assert settings["most"] == DEFAULTS["most"] and settings["budget_ms"] == DEFAULTS["budget_ms"]
    assert "job" not in settings
    assert point_id("/a.py", {**asked, "capture": {"rank": 3}}) != settings["id"]


def test_a_worker_is_given_a_condition_that_captures_and_is_false() -> None:
    tagged = tag("/a.py", [{"line": 3, "mode": "capture", "condition": "x > 1", "logMessage": "m"}])

    given = for_worker(tagged[0])

    assert set(given) == {"line", "condition", "capture", "mode"}  # no logMessage, no hits
    call = ast.parse(given["condition"], mode="eval").body
    assert isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
    assert call.func.attr == "hit"
    point, settings = (ast.literal_eval(arg) for arg in call.args)
    assert point == tagged[0]["capture"]["id"]
    assert json.loads(settings)["condition"] == "x > 1"
    assert for_worker({"line": 4}) == {"line": 4}
