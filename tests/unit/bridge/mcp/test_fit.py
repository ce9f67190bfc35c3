"""Answers stay small enough for an agent, and say what was cut."""

from __future__ import annotations

import json

from raydap.bridge.mcp.fit import fit


def test_a_small_answer_is_given_as_it_is() -> None:
    answer = {"workers": [{"id": "a1", "state": "paused"}], "count": 1}
    assert fit(answer) is answer


def test_a_long_value_and_a_long_list_are_cut_and_say_so() -> None:
    answer = {"results": [{"id": f"w{i}", "result": "x" * 5000} for i in range(500)]}
    cut = fit(answer, limit=20_000)
    assert len(json.dumps(cut, separators=(",", ":"))) <= 20_000
    assert cut["cut"] is True and "filter" in cut["hint"]
    first = cut["results"][0]["result"]
    assert first.startswith("xxx") and first.endswith("more characters)")
    assert cut["results"][-1].startswith("… ") and cut["results"][-1].endswith(" more")
    assert answer["results"][0]["result"] == "x" * 5000  # the answer itself is not changed


def test_deep_answers_are_cut_too() -> None:
    tree: dict[str, object] = {"function": "f", "children": []}
    node = tree
    for _ in range(60):
        child: dict[str, object] = {"function": "g" * 3000, "children": []}
        node["children"] = [child, *(["sibling"] * 300)]
        node = child
    cut = fit({"tree": tree}, limit=10_000)
    assert len(json.dumps(cut, separators=(",", ":"))) <= 10_000
    assert cut["cut"] is True
