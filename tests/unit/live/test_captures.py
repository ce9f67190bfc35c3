"""A capture point's condition, as the bridge writes it and a worker reads it back without
compiling it at every hit; anything else is left to pydevd."""

from __future__ import annotations

from raydap.live.captures import condition, read_condition


def test_a_condition_reads_back_as_its_points() -> None:
    points = [("cp-0123456789", '{"interval": 1.0}'), ("cp-9876543210", '{"rank": 2}')]

    written = condition(points)

    assert read_condition(written) == points
    assert (
        eval(written.replace("__import__", "(lambda *a, **k: Points())"), {"Points": Points})
        is False
    )


class Points:
    def hit(self, point: str, settings: str) -> bool:
        return False


def test_anything_else_is_not_read_as_capture_points() -> None:
    written = condition([("cp-0123456789", "{}")])
    plain = f"{written} or (step > 5)"  # a plain breakpoint on the same line
    smuggled = written.replace("_c.hit(", "print('x') or _c.hit(")

    assert read_condition(plain) is None
    assert read_condition(smuggled) is None
    assert read_condition("x > 1") is None
    assert read_condition(written.replace("'{}'", "settings")) is None
