"""Source as pdb prints it."""

from __future__ import annotations

from raydap.bridge.client.pdb import source

TEXT = """import ray


@ray.remote
def step(x, /, y, *rest, scale=2, **options):
    z = x + y
    return z * scale


value = 1
"""


def test_where_a_frame_is() -> None:
    assert source.location("/w/a.py", 6, "step") == "/w/a.py(6)step()"
    lines = TEXT.splitlines()
    assert source.current_line(lines, 6) == "-> z = x + y"
    assert source.current_line(None, 6) == ""
    assert source.current_line(lines, 99) == ""


def test_a_listing_marks_the_current_line_and_breakpoints() -> None:
    listed = source.listing(TEXT.splitlines(), 5, 7, current=6, breaks=[7]).splitlines()
    assert listed == [
        "  5  \tdef step(x, /, y, *rest, scale=2, **options):",
        "  6  ->\t    z = x + y",
        "  7 B\t    return z * scale",
    ]


def test_longlist_covers_the_function_from_its_decorator() -> None:
    assert source.function_range(TEXT, 6, "step") == (4, 7)
    assert source.function_range(TEXT, 10, "<module>") == (1, 10)


def test_args_are_named_in_pdbs_order() -> None:
    assert source.parameters(TEXT, 6, "step") == ["x", "y", "scale", "rest", "options"]
    assert source.parameters(TEXT, 10, "<module>") == []
