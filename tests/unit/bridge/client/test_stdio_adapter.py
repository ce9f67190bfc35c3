"""What ``raydap dap`` adds to an editor's attach request, and how it reads ``--follow``."""

import pytest

from raydap.bridge.client.stdio_adapter import AttachDefaults, parse_follow
from raydap.bridge.workers.filters import BadFilter
from raydap.protocol import Request


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", True),
        ("job=02000000", {"job": "02000000"}),
        ("job=02000000,task=train*", {"job": "02000000", "task": "train*"}),
        ('{"actor": "Rank"}', {"actor": "Rank"}),
    ],
)
def test_follow_filters(text: str, expected: object) -> None:
    assert parse_follow(text) == expected


@pytest.mark.parametrize("text", ["job", "rank=3", '{"job": 5}', "{", "job=" + "x" * 300])
def test_a_bad_follow_filter_says_what_one_looks_like(text: str) -> None:
    with pytest.raises(BadFilter, match="job=ID,task=GLOB"):
        parse_follow(text)


def test_the_editors_configuration_wins_over_the_command_line() -> None:
    defaults = AttachDefaults("secret", {"follow": {"job": "02000000"}})
    plain = defaults.apply(Request(seq=2, command="attach", arguments={}))
    assert plain.arguments == {"token": "secret", "follow": {"job": "02000000"}}
    chosen = {"breakpoint": "ab12", "token": "theirs"}
    given = defaults.apply(Request(seq=2, command="attach", arguments=chosen))
    assert given.arguments == chosen and given.seq == 2
    other = Request(seq=3, command="threads")
    assert defaults.apply(other) is other
