"""Capture points as breakpoints: one id for one point whoever sets it, settings kept when a
list is sent again, limits a client cannot break, and a worker breakpoint that never stops."""

from __future__ import annotations

import ast
import json

from raydap.adapter import bridge_capabilities
from raydap.adapter.captures.points import DEFAULTS, for_worker, point_id, tag, unmerge


def test_the_bridge_offers_the_capture_mode_beside_a_plain_stop() -> None:
    modes = bridge_capabilities(None)["breakpointModes"]

    # VS Code shows "Edit Mode..." only for a breakpoint with more than one mode.
    assert [(m["mode"], m["label"]) for m in modes] == [
        ("stop", "Stop"), ("capture", "Capture (no stop)"),
    ]  # fmt: skip
    assert all(m["appliesTo"] == ["source"] for m in modes)


def test_a_breakpoint_switched_back_to_stop_reaches_debugpy_as_a_plain_one() -> None:
    stop = {"line": 7, "mode": "stop", "condition": "x > 1"}
    point = tag("/a.py", [{"line": 7, "mode": "capture"}])[0]

    alone, _ = for_worker([stop])
    together, _ = for_worker([stop, point])

    assert alone == [{"line": 7, "condition": "x > 1"}]
    assert "mode" not in together[0] and together[0]["condition"].endswith(" or (x > 1)")


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


def test_a_rank_set_is_the_bridges_to_read_and_makes_another_point() -> None:
    asked = {"line": 3, "mode": "capture", "capture": {"ranks": "tp=1"}}
    too_long = {"line": 3, "mode": "capture", "capture": {"ranks": "0," * 600}}

    [point] = tag("/a.py", [asked])
    [everyone] = tag("/a.py", [too_long])

    assert point["capture"]["ranks"] == "tp=1" and "ranks" not in everyone["capture"]
    assert point["capture"]["id"] != point_id("/a.py", {"line": 3, "mode": "capture"})
    [(_, settings)] = calls_in(for_worker([point])[0][0]["condition"])
    assert "ranks" not in settings  # the worker is given the point, not whom it is for


def calls_in(condition: str) -> list[tuple[str, dict[str, object]]]:
    """The capture points a worker's condition captures: (id, settings) of each hit() call."""
    found = []
    for node in ast.walk(ast.parse(condition, mode="eval")):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "hit":
            point, settings = (ast.literal_eval(arg) for arg in node.args)
            found.append((point, json.loads(settings)))
    return found


def test_a_worker_is_given_a_condition_that_captures_and_is_false() -> None:
    tagged = tag("/a.py", [{"line": 3, "mode": "capture", "condition": "x > 1", "logMessage": "m"}])

    [given], positions = for_worker(tagged)

    assert positions == [0] and set(given) == {"line", "condition", "capturePoints"}
    [(point, settings)] = calls_in(given["condition"])
    assert point == tagged[0]["capture"]["id"] and settings["condition"] == "x > 1"
    assert given["capturePoints"] == [{**tagged[0]["capture"], "condition": "x > 1"}]
    assert for_worker([{"line": 4}]) == ([{"line": 4}], [0])


def test_points_and_a_plain_breakpoint_on_one_line_are_one_breakpoint_that_stops() -> None:
    """debugpy keeps one breakpoint a line: the last given would replace the others."""
    points = tag("/a.py", [{"line": 3, "mode": "capture"},
                           {"line": 3, "mode": "capture", "capture": {"rank": 1}}])  # fmt: skip
    plain = {"line": 3, "condition": "step > 5", "hitCondition": "2"}

    given, positions = for_worker([points[0], {"line": 9}, plain, points[1]])

    assert len(given) == 2 and positions == [0, 1, 0, 0]
    merged = given[0]
    assert [p for p, _ in calls_in(merged["condition"])] == [p["capture"]["id"] for p in points]
    assert merged["condition"].endswith(" or (step > 5)") and merged["hitCondition"] == "2"
    alone, _ = for_worker(points)
    assert "or" not in alone[0]["condition"].rsplit(")", 1)[-1]  # no plain one: never stops


def test_a_list_given_to_a_worker_reads_back_as_its_plain_breakpoints() -> None:
    """What a restarted bridge restores from a kept list: each plain breakpoint as it was asked
    (the condition of its line's merged one included), capture points left to their owners."""
    plain = {"line": 7, "condition": "x > 1"}
    alone = {"line": 9}
    points = tag("/a.py", [{"line": 7, "mode": "capture"}, {"line": 12, "mode": "capture"}])

    given, _ = for_worker([plain, alone, *points])

    assert unmerge(json.loads(json.dumps(given))) == [plain, alone]  # as kept in GCS, as JSON
