"""What a worker sends about captures, checked against bounds before anything else reads it.

A worker is untrusted data: its job's code runs in it, so what it says may be anything. A
capture must not make the bridge allocate without bound (a source said to start at line 50
million), nest deeper than the bridge can serialize, or carry names and texts of any length.
:func:`check` reads a capture event into a :class:`Told`, or says which bound it broke; the
caller refuses it, counts it, and goes on. The worker's claims of its own job and rank are not
read at all: those come from its record and the point.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

#: A capture point's id, as :mod:`raydap.adapter.captures.points` makes them.
POINT_ID = r"^cp-[0-9a-f]{10}$"
MAX_FRAMES = 64
#: A line number past any real source file (a capture's source is padded to it for editors).
MAX_LINE = 1_000_000
MAX_SOURCE_LINES = 512
#: Names (locals, keys, types, functions) and texts (a value, a source line, a path).
MAX_NAME = 1024
MAX_TEXT = 64 * 1024
#: How deep values nest (the worker reads 3 levels by default; pydantic's JSON stops near 255).
MAX_DEPTH = 32
#: Values in one capture, counted over every frame.
MAX_NODES = 50_000
MAX_REASON = 500

Name = Annotated[str, StringConstraints(max_length=MAX_NAME)]
Text = Annotated[str, StringConstraints(max_length=MAX_TEXT)]


class Source(BaseModel):
    model_config = ConfigDict(extra="ignore")

    first: int = Field(ge=1, le=MAX_LINE)
    lines: list[Text] = Field(max_length=MAX_SOURCE_LINES)


class Frame(BaseModel):
    model_config = ConfigDict(extra="ignore")

    function: Name
    path: Text
    line: int = Field(ge=0, le=MAX_LINE)
    source: Source | None = None
    #: Values as :mod:`raydap.live.capture_values` reads them; their shape is checked by
    #: :func:`_nodes_problem` (a recursive model would be checked as deep as it goes).
    locals: list[dict[str, Any]] | None = None
    cut: Name | None = None


class Told(BaseModel):
    """A capture event as the bridge takes it."""

    model_config = ConfigDict(extra="ignore")

    point: Annotated[str, StringConstraints(pattern=POINT_ID)] | None = None
    hit: int | None = Field(None, ge=0)
    time: float
    frames: list[Frame] = Field(default_factory=list, max_length=MAX_FRAMES)
    cut: bool = False
    thread: Name | None = None
    cost_ms: float | None = Field(None, ge=0)
    cpu_ms: float | None = Field(None, ge=0)
    exception: Annotated[str, StringConstraints(max_length=2 * MAX_REASON)] | None = None
    #: Why the worker turned the point off (its own words, so cut to a bound).
    disabled: str | None = None


class Refused(ValueError):
    """A capture event past a bound; the message says which, never the value."""


def check(body: object) -> Told:
    """``body`` as a :class:`Told`, or :class:`Refused`."""
    if not isinstance(body, dict):
        raise Refused("not an object")
    if isinstance(body.get("disabled"), str):
        body = {**body, "disabled": body["disabled"][:MAX_REASON]}
    frames = body.get("frames")
    if isinstance(frames, list):
        shown = [f.get("locals") for f in frames[:MAX_FRAMES] if isinstance(f, dict)]
        problem = _nodes_problem(shown)
        if problem is not None:
            raise Refused(problem)
    try:
        return Told.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise Refused(f"{where}: {first['msg']}") from None


def _nodes_problem(roots: Any) -> str | None:
    """Why the values of a capture's frames break a bound, or None. Walked without recursion:
    the depth is what is being checked."""
    stack: list[tuple[object, int]] = [(root, 0) for root in roots if root is not None]
    seen = 0
    while stack:
        nodes, depth = stack.pop()
        if depth > MAX_DEPTH:
            return f"values nest deeper than {MAX_DEPTH}"
        if not isinstance(nodes, list):
            return "values are not a list"
        seen += len(nodes)
        if seen > MAX_NODES:
            return f"more than {MAX_NODES} values"
        for node in nodes:
            if not isinstance(node, dict):
                return "a value is not an object"
            for key, bound in (("name", MAX_NAME), ("type", MAX_NAME), ("value", MAX_TEXT),
                               ("values", MAX_TEXT), ("cut", MAX_NAME), ("device", MAX_NAME),
                               ("dtype", MAX_NAME)):  # fmt: skip
                text = node.get(key)
                if text is not None and (not isinstance(text, str) or len(text) > bound):
                    return f"a value's {key} is not text of at most {bound} characters"
            children = node.get("children")
            if children is not None:
                stack.append((children, depth + 1))
    return None
