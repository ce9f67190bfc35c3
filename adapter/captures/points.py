"""Capture points as breakpoints: the DAP mode ``capture``, and what a worker is given for one.

A client sets a capture point as a source breakpoint with ``"mode": "capture"`` (DAP 1.65's
``breakpointModes``; VS Code offers it under "Edit Mode"). Before it enters the books it is
tagged (:func:`tag`) with its settings under ``"capture"``: the point's id, made from where it
is and what it asks so that every session and door setting the same point names it alike, its
limits, and the time it expires, kept from the list the session set before so that sending a
file's list again changes nothing. A worker is given a plain breakpoint whose condition calls
:func:`raydap.live.captures.hit` and is always false (:func:`for_worker`): it never stops.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from raydap.live.captures import condition as capture_condition

MODE = "capture"
#: A plain breakpoint's mode, said so a client can switch back to it.
STOP_MODE = "stop"
#: What the bridge offers in ``capabilities.breakpointModes``. Two, as VS Code offers "Edit
#: Mode..." only where a breakpoint has more than one.
BREAKPOINT_MODES = [
    {
        "mode": STOP_MODE,
        "label": "Stop",
        "description": "Pause the worker that reaches this line (a breakpoint)",
        "appliesTo": ["source"],
    },
    {
        "mode": MODE,
        "label": "Capture (no stop)",
        "description": "Record the stack and locals of every rank that reaches this line, and "
        "let it run on",
        "appliesTo": ["source"],
    },
]
#: The field of a breakpoint object that holds a capture point's settings.
SETTINGS = "capture"
#: The field of a breakpoint given to a worker that lists the capture points it holds.
RIDING = "capturePoints"
#: The field of a worker's breakpoint that merges capture points with a plain breakpoint: the
#: plain one as asked (so a kept list can be read back as it was asked: :func:`unmerge`).
PLAIN = "plainBreakpoint"
#: The settings a point gets unless it asks otherwise (see :class:`raydap.live.captures.Limits`).
DEFAULTS: dict[str, Any] = {"interval": 1.0, "most": 50, "budget_ms": 50.0}
#: How long a point captures (seconds) unless it asks otherwise.
LIFETIME = 3600.0
#: What a point may ask beside its line and condition, and what the worker reads.
LIMIT_FIELDS = ("interval", "most", "budget_ms", "until")
FILTER_FIELDS = ("rank", "job")
#: Whom a point is given to, read by the bridge and never sent to a worker: a rank set's text
#: (parsed by the bridge alone, which gives the point only to the ranks it names).
GIVEN_TO_FIELDS = ("ranks",)
#: The longest rank set a point keeps (the bridge's doors refuse a longer one first).
MAX_RANKS_TEXT = 1000
#: Set by the bridge for every point (``raydap serve --redact``), never by a client.
REDACTION_FIELDS = ("secret_names", "secret_values")
_WORKER_FIELDS = ("id", "condition", *LIMIT_FIELDS, *FILTER_FIELDS, *REDACTION_FIELDS)


def is_capture(breakpoint: Mapping[str, Any]) -> bool:
    return breakpoint.get("mode") == MODE


def point_id(path: str, breakpoint: Mapping[str, Any]) -> str:
    """The id of the point at ``path`` and the breakpoint's line, condition and filters."""
    settings = breakpoint.get(SETTINGS)
    asked = {
        "path": path, "line": breakpoint.get("line"), "condition": breakpoint.get("condition"),
        **({k: settings.get(k) for k in FILTER_FIELDS} if isinstance(settings, dict) else {}),
    }  # fmt: skip
    for k in GIVEN_TO_FIELDS:  # only where set: a point on every rank keeps the id it had
        if isinstance(settings, dict) and settings.get(k) is not None:
            asked[k] = settings[k]
    digest = hashlib.sha256(json.dumps(asked, sort_keys=True).encode()).hexdigest()
    return f"cp-{digest[:10]}"


def tag(
    path: str, breakpoints: Iterable[dict[str, Any]], before: Iterable[dict[str, Any]] = ()
) -> list[dict[str, Any]]:
    """``breakpoints`` with each capture point's settings filled in (new objects); a point in
    ``before`` (the list as it was) keeps its settings, its expiry included."""
    kept = {
        settings["id"]: settings
        for b in before
        if is_capture(b) and isinstance(settings := b.get(SETTINGS), dict) and "id" in settings
    }
    tagged = []
    for breakpoint in breakpoints:
        if not is_capture(breakpoint):
            tagged.append(breakpoint)
            continue
        asked = breakpoint.get(SETTINGS)
        asked = asked if isinstance(asked, dict) else {}
        pid = point_id(path, breakpoint)
        settings = kept.get(pid) or {
            **DEFAULTS,
            "until": time.time() + LIFETIME,
            **_valid(asked),
            "id": pid,
        }
        tagged.append({**breakpoint, SETTINGS: settings})
    return tagged


def _valid(asked: Mapping[str, Any]) -> dict[str, Any]:
    """The limits and filters a client asked for that a worker can use (others are dropped:
    a breakpoint object has no way to refuse one field)."""
    valid: dict[str, Any] = {}
    for name in LIMIT_FIELDS:
        value = asked.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
            valid[name] = value
    rank, job = asked.get("rank"), asked.get("job")
    if isinstance(rank, int) and not isinstance(rank, bool) and rank >= 0:
        valid["rank"] = rank
    if isinstance(job, str) and 0 < len(job) <= 64:
        valid["job"] = job
    ranks = asked.get("ranks")
    if isinstance(ranks, str) and 0 < len(ranks) <= MAX_RANKS_TEXT:
        valid["ranks"] = ranks
    return valid


def for_worker(
    breakpoints: Sequence[dict[str, Any]], capture: dict[str, Any] | None = None
) -> tuple[list[dict[str, Any]], list[int]]:
    """What debugpy is given for a list of breakpoints, and where each one's answer will be.

    A capture point becomes a breakpoint whose condition captures and is false. debugpy keeps
    one breakpoint per line, so the points of one line are given as one breakpoint that
    captures each of them, and a line that also has a plain breakpoint keeps it: the condition
    captures first, then is the plain one's (its hit and log settings kept)."""
    lines: dict[object, list[int]] = {}
    for index, breakpoint in enumerate(breakpoints):
        lines.setdefault(breakpoint.get("line"), []).append(index)
    given: list[dict[str, Any]] = []
    positions = [0] * len(breakpoints)
    for line, indexes in lines.items():
        points = [breakpoints[i] for i in indexes if _settings(breakpoints[i]) is not None]
        plain = [breakpoints[i] for i in indexes if _settings(breakpoints[i]) is None]
        if not points:  # plain breakpoints are given as they are, as before
            for i in indexes:
                positions[i] = len(given)
                given.append(_plain(breakpoints[i]))
            continue
        merged = _capturing(line, points, plain[-1] if plain else None, capture or {})
        for i in indexes:
            positions[i] = len(given)
        given.append(merged)
    return given, positions


def _plain(breakpoint: dict[str, Any]) -> dict[str, Any]:
    """A breakpoint as debugpy knows one: without a mode (a client's "stop")."""
    if "mode" not in breakpoint:
        return breakpoint
    return {key: value for key, value in breakpoint.items() if key != "mode"}


def _settings(breakpoint: dict[str, Any]) -> dict[str, Any] | None:
    settings = breakpoint.get(SETTINGS)
    if is_capture(breakpoint) and isinstance(settings, dict) and "id" in settings:
        return settings
    return None


def _capturing(
    line: object,
    points: Sequence[dict[str, Any]],
    plain: dict[str, Any] | None,
    capture: dict[str, Any],
) -> dict[str, Any]:
    calls, held = [], []
    for point in points:
        settings = _settings(point) or {}
        mine = {k: v for k, v in settings.items() if k not in REDACTION_FIELDS}
        asked = {"condition": point.get("condition"), **mine, **capture}
        asked = {k: asked[k] for k in _WORKER_FIELDS if asked.get(k) is not None}
        calls.append((str(settings["id"]), json.dumps(asked, sort_keys=True)))
        # The settings ride along (debugpy ignores fields it does not know), so a list kept
        # for workers that start later still says which capture points it holds.
        held.append({**settings, **({"condition": asked["condition"]} if "condition" in asked
                                      else {})})  # fmt: skip
    condition = capture_condition(calls)
    if plain is None:
        return {"line": line, "condition": condition, RIDING: held}
    # Captures are taken, then the plain breakpoint stops as it would have.
    own = plain.get("condition")
    stop = f"({own})" if isinstance(own, str) and own.strip() else "True"
    own_breakpoint = _plain(plain)
    return {**own_breakpoint, "condition": f"{condition} or {stop}", RIDING: held,
            PLAIN: own_breakpoint}  # fmt: skip


def unmerge(given: Sequence[Any]) -> list[dict[str, Any]]:
    """The plain breakpoints of a list :func:`for_worker` made, as they were asked: a line's
    merged breakpoint back to its plain one, capture points left out (whoever owns them gives
    them again: a restarted bridge reads its own from ``points.json``)."""
    plain = []
    for breakpoint in given:
        if not isinstance(breakpoint, dict):
            continue
        if RIDING not in breakpoint:
            plain.append(breakpoint)
        elif isinstance(own := breakpoint.get(PLAIN), dict):
            plain.append(own)
    return plain


def riding(breakpoint: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The capture points a breakpoint given to a worker holds (their settings)."""
    found = breakpoint.get(RIDING)
    return (
        [p for p in found if isinstance(p, dict) and "id" in p] if isinstance(found, list) else []
    )
