"""Answers small enough for an agent's context: long strings and long lists are cut, and each
cut says what was left out and how to get more."""

from __future__ import annotations

import json
from typing import Any

#: The most an answer may hold, in characters of JSON.
MAX_ANSWER_CHARS = 40_000
#: Where cutting starts: each string, each list.
FIRST_STRING, FIRST_ITEMS = 2_000, 200
HOW_TO_SEE_MORE = "narrow it: a filter, one worker, or an expression for the part you need"


def fit(answer: dict[str, Any], limit: int = MAX_ANSWER_CHARS) -> dict[str, Any]:
    """``answer`` itself if its JSON fits in ``limit``; else a copy with strings and lists cut
    shorter and shorter until it does, marked ``"cut": true`` with a ``hint``."""
    if len(_json(answer)) <= limit:
        return answer
    strings, items = FIRST_STRING, FIRST_ITEMS
    while True:
        cut = {**_cut(answer, strings, items), "cut": True, "hint": HOW_TO_SEE_MORE}
        if len(_json(cut)) <= limit or (strings <= 20 and items <= 1):
            return cut
        strings, items = max(20, strings // 2), max(1, items // 2)


def _cut(value: Any, strings: int, items: int) -> Any:
    if isinstance(value, str) and len(value) > strings:
        return f"{value[:strings]}… ({len(value) - strings} more characters)"
    if isinstance(value, dict):
        return {k: _cut(v, strings, items) for k, v in value.items()}
    if isinstance(value, list):
        kept = [_cut(v, strings, items) for v in value[:items]]
        if len(value) > items:
            kept.append(f"… {len(value) - items} more")
        return kept
    return value


def _json(value: Any) -> str:
    return json.dumps(value, default=str, separators=(",", ":"))


def dumps(answer: dict[str, Any]) -> str:
    """The answer as the JSON text a tool result carries."""
    return _json(fit(answer))
