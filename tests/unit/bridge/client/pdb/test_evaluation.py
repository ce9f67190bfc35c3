"""Python typed at the prompt: the wrapped expressions give pdb's text, errors one line."""

from __future__ import annotations

import pprint

import pytest

from raydap.bridge.client.pdb import evaluation


@pytest.mark.parametrize(
    ("how", "value", "printed"),
    [
        ("repr", "abc", "'abc'"),
        ("repr", None, "None"),
        ("repr", list(range(300)), repr(list(range(300)))),  # whole, not abridged
        ("pformat", {"b": list(range(30)), "a": 1}, pprint.pformat({"b": list(range(30)), "a": 1})),
        ("type", 3, "<class 'int'>"),
        ("echo", None, ""),
        ("echo", 0, "0"),
    ],
)
def test_the_wrapped_expression_evaluates_to_what_pdb_prints(
    how: str, value: object, printed: str
) -> None:
    wrapped = evaluation.shown("value  # a comment", how)
    answer = eval(wrapped, {}, {"value": value})
    # debugpy shows the resulting str as its repr; decoding it gives the text back.
    assert evaluation.decode(repr(answer)) == printed


def test_decode_refuses_what_is_not_a_string() -> None:
    assert evaluation.decode("NameError('x')") is None
    assert evaluation.decode("12") is None


def test_an_error_is_its_last_line() -> None:
    traceback = (
        "Traceback (most recent call last):\n"
        '  File "<string>", line 1, in <module>\n'
        "NameError: name 'x' is not defined\n"
    )
    assert evaluation.error_line(traceback) == "*** NameError: name 'x' is not defined"
    assert evaluation.error_line("") == "*** error"


def test_statements_are_split_so_each_expression_is_echoed() -> None:
    pieces = evaluation.split("import os; os.getpid()")
    assert [(p.source, p.is_expression) for p in pieces] == [
        ("import os", False),
        ("os.getpid()", True),
    ]
    [loop] = evaluation.split("for i in range(3): print(i)")
    assert not loop.is_expression


def test_a_syntax_error_is_found_before_anything_is_sent() -> None:
    with pytest.raises(SyntaxError) as caught:
        evaluation.split("b 32 x")
    assert evaluation.syntax_error(caught.value).startswith("*** SyntaxError: ")


def test_literal_reads_only_tuples() -> None:
    assert evaluation.literal("('/a.py', 3, 'f')") == ("/a.py", 3, "f")
    for answer in (None, "[1]", "os.system('x')"):
        with pytest.raises(ValueError):
            evaluation.literal(answer)
