from pathlib import Path

import pytest

from raydap.bridge.server.auth import ANONYMOUS, Authenticator, TokenError, load_tokens

SECRET = "s3cret-s3cret-s3cret"


def test_token_file_and_environment(tmp_path: Path) -> None:
    file = tmp_path / "tokens"
    file.write_text(f"# team\nalice debug {SECRET}a\n\nbob view {SECRET}b  # read-only\n")
    tokens = load_tokens(file, f"{SECRET}c")
    assert [(t.name, t.role) for t in tokens] == [
        ("alice", "debug"),
        ("bob", "view"),
        ("env", "debug"),
    ]
    assert SECRET not in repr(tokens)  # secrets stay out of reprs and so out of logs
    auth = Authenticator(tokens)
    assert auth.check(f"{SECRET}b").name == "bob"  # type: ignore[union-attr]
    assert auth.check("wrong") is None and auth.check(None) is None
    assert auth.from_header(f"Bearer {SECRET}a").name == "alice"  # type: ignore[union-attr]
    assert auth.from_header(f"Basic {SECRET}a") is None


def test_view_tokens_look_but_do_not_touch(tmp_path: Path) -> None:
    file = tmp_path / "tokens"
    file.write_text(f"bob view {SECRET}\n")
    [bob] = load_tokens(file, None)
    assert bob.allows("stackTrace") and bob.allows("variables") and bob.allows("source")
    for command in ("evaluate", "setVariable", "continue", "next", "pause", "setBreakpoints",
                    "raydapContinueAll", "completions"):  # fmt: skip
        assert not bob.allows(command)


def test_without_tokens_everyone_is_anonymous_debug() -> None:
    assert Authenticator([]).check(None) is ANONYMOUS
    assert not Authenticator([]).required


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (f"alice {SECRET}\n", "expected NAME ROLE SECRET"),
        (f"alice root {SECRET}\n", "role must be debug or view"),
        ("alice debug short\n", "shorter than 16"),
        (f"a debug {SECRET}1\na view {SECRET}2\n", "unique: a"),
    ],
)
def test_bad_token_files_say_where(tmp_path: Path, text: str, problem: str) -> None:
    file = tmp_path / "tokens"
    file.write_text(text)
    with pytest.raises(TokenError, match=problem) as error:
        load_tokens(file, None)
    assert SECRET not in str(error.value) and "short\n" not in str(error.value)
