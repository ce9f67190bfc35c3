"""What a typed line means: pdb's commands and aliases, else Python."""

from __future__ import annotations

import pytest

from raydap.bridge.client.pdb import commands
from raydap.bridge.client.pdb.commands import Line, parse


@pytest.mark.parametrize(
    ("typed", "meaning"),
    [
        ("p x", Line("p", "x")),
        ("  pp  {'a': 1} ", Line("pp", "{'a': 1}")),
        ("bt", Line("where", "")),
        ("w", Line("where", "")),
        ("b app.py:12, x > 3", Line("break", "app.py:12, x > 3")),
        ("cl", Line("clear", "")),
        ("unt 40", Line("until", "40")),
        ("rv", Line("retval", "")),
        ("q", Line("quit", "")),
        # Python, not commands:
        ("x = 5", Line(None, "x = 5")),
        ("c = 5", Line(None, "c = 5")),  # pdb would continue here
        ("n += 1", Line(None, "n += 1")),
        ("p(x)", Line(None, "p(x)")),
        ("list(range(3))", Line(None, "list(range(3))")),
        ("!n", Line(None, "n")),
        ("[1, 2]", Line(None, "[1, 2]")),
    ],
)
def test_a_line_is_a_pdb_command_or_python(typed: str, meaning: Line) -> None:
    assert parse(typed) == meaning


def test_c_equals_equals_is_still_the_command_with_an_argument() -> None:
    assert parse("c == 5") == Line("continue", "== 5")


def test_help_lists_every_command_and_explains_one() -> None:
    listing = commands.help_text()
    assert all(name in listing for name in commands.COMMANDS)
    assert commands.help_text("bt").startswith("w(here)")
    assert commands.help_text("nonsense") == "*** No help for 'nonsense'"


def test_every_command_has_a_handler_but_interact_which_the_prompt_runs() -> None:
    from raydap.bridge.client.pdb.handlers import HANDLERS

    assert set(commands.COMMANDS) - set(HANDLERS) == {"interact"}
    assert set(HANDLERS) <= set(commands.COMMANDS)
