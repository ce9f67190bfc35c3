"""pdb's numbered breakpoint table, and the DAP requests made from it."""

from __future__ import annotations

from raydap.bridge.client.pdb.breakpoints import BreakpointTable


def test_each_file_is_sent_whole_with_conditions_and_ignore_counts() -> None:
    table = BreakpointTable()
    table.add("/w/a.py", 10)
    second = table.add("/w/a.py", 20, condition="x > 3")
    table.add("/w/b.py", 5)
    table.change(second.number, ignore=2)
    disabled = table.add("/w/a.py", 30)
    table.change(disabled.number, enabled=False)

    assert table.line_requests("/w/a.py") == {
        "source": {"path": "/w/a.py"},
        "breakpoints": [{"line": 10}, {"line": 20, "condition": "x > 3", "hitCondition": ">= 3"}],
    }
    assert table.line_requests("/w/b.py")["breakpoints"] == [{"line": 5}]


def test_function_breakpoints_go_together() -> None:
    table = BreakpointTable()
    table.add("/w/a.py", 3, function="train_step")
    table.add("/w/a.py", 8)
    assert table.function_requests() == {"breakpoints": [{"name": "train_step"}]}
    assert table.line_requests("/w/a.py")["breakpoints"] == [{"line": 8}]


def test_numbers_keep_counting_after_a_removal_and_entries_are_replaced_not_changed() -> None:
    table = BreakpointTable()
    first = table.add("/w/a.py", 1)
    table.remove(first.number)
    second = table.add("/w/a.py", 2)
    assert second.number == 2
    changed = table.change(2, hits=1)
    assert second.hits == 0 and changed.hits == 1


def test_a_stop_is_matched_to_its_breakpoints() -> None:
    table = BreakpointTable()
    line = table.add("/w/a.py", 12)
    function = table.add("/w/a.py", 3, function="step")
    assert table.hit("/w/a.py", 12, "loop") == [line]
    assert table.hit("/w/a.py", 4, "step") == [function]
    assert table.hit("/w/a.py", 13, "loop") == []


def test_the_listing_looks_like_pdbs() -> None:
    table = BreakpointTable()
    table.add("/w/a.py", 12, condition="i == 3")
    temporary = table.add("/w/b.py", 7, temporary=True)
    table.change(1, hits=2)
    table.change(temporary.number, enabled=False)
    assert table.listing().splitlines() == [
        "Num Type         Disp Enb   Where",
        "1   breakpoint   keep yes   at /w/a.py:12",
        "\tstop only if i == 3",
        "\tbreakpoint already hit 2 times",
        "2   breakpoint   del  no    at /w/b.py:7",
    ]
