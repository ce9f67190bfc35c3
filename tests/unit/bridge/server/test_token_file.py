import os
import stat
from pathlib import Path

import pytest

from raydap.bridge.server import token_file
from raydap.bridge.server.auth import Token


@pytest.fixture
def tokens(tmp_path: Path) -> Path:
    path = tmp_path / "tokens"
    path.write_text("# the team's tokens\nops debug " + "o" * 32 + "  # the operator\n")
    path.chmod(0o640)
    if os.geteuid() == 0:
        os.chown(path, 1000, 1000)  # the bridge's user; the operator edits as root
    return path


def test_add_list_remove_keep_the_files_owner_group_mode_and_comments(tokens: Path) -> None:
    before = tokens.stat()
    secret = token_file.add(tokens, "alice", "view")
    assert len(secret) >= 32
    assert [(t.name, t.role) for t in token_file.listed(tokens)] == [
        ("ops", "debug"), ("alice", "view"),
    ]  # fmt: skip
    token_file.remove(tokens, "ops")
    after = tokens.stat()
    assert (after.st_uid, after.st_gid, stat.S_IMODE(after.st_mode)) == (
        before.st_uid, before.st_gid, 0o640,
    )  # fmt: skip
    assert tokens.read_text() == f"# the team's tokens\nalice view {secret}\n"
    assert not list(tokens.parent.glob(".*part"))  # nothing left beside it


def test_bad_edits_are_refused_and_change_nothing(tokens: Path) -> None:
    text = tokens.read_text()
    with pytest.raises(token_file.TokenFileError, match="has a token already"):
        token_file.add(tokens, "ops", "debug")
    with pytest.raises(token_file.TokenFileError, match="not a token name"):
        token_file.add(tokens, "alice smith", "debug")
    with pytest.raises(token_file.TokenFileError, match="RAYDAP_TOKEN"):
        token_file.add(tokens, "env", "debug")
    with pytest.raises(token_file.TokenFileError, match="no token named 'zed'"):
        token_file.remove(tokens, "zed")
    assert tokens.read_text() == text


def test_a_new_file_is_its_owners_only(tmp_path: Path) -> None:
    path = tmp_path / "new"
    token_file.add(path, "alice", "debug")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_the_running_bridge_reads_the_file_again_when_it_changes(tokens: Path) -> None:
    served: list[list[Token]] = []
    watch = token_file.TokenFileWatch(tokens, None, served.append)
    assert not watch.check()  # unchanged since the bridge read it
    token_file.add(tokens, "bob", "debug")
    assert watch.check()
    assert [t.name for t in served[-1]] == ["ops", "bob"]
    tokens.write_text("broken line\n")  # a hand edit gone wrong: the tokens stay
    assert not watch.check()
    assert len(served) == 1
