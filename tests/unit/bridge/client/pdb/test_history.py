"""The pdb's history on a machine that never ran raydap: made owner-only where XDG says, or
said (once, with the variable to set) where it cannot be written."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from raydap.bridge.client.pdb import console
from raydap.bridge.client.pdb.console import History, history_file

pytestmark = pytest.mark.skipif(console.readline is None, reason="no readline here")


def test_a_fresh_home_gets_an_owner_only_history(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in ("RAYDAP_HISTORY", "XDG_STATE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    path = history_file()
    assert path == tmp_path / ".local" / "state" / "raydap" / "history"
    history = History(path)
    assert console.readline is not None
    console.readline.add_history("p secret_token")
    history.save()
    for folder in (path.parent, path.parent.parent, path.parent.parent.parent):  # made here
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert "p secret_token" in path.read_text()


def test_a_history_that_cannot_be_written_is_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "state").write_text("a file where a directory should be")
    History(tmp_path / "state" / "raydap" / "history").save()
    said = capsys.readouterr().err
    assert "history not kept" in said and "RAYDAP_HISTORY" in said


def test_the_suites_own_history_setting_leaves_dev_null_as_it_was(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``RAYDAP_HISTORY=/dev/null`` (tests/e2e sets it) turns the history off. Found on main:
    run as root, as CI runs, the save made the machine's /dev/null ``crw-------``."""
    monkeypatch.setenv("RAYDAP_HISTORY", "/dev/null")
    before = os.stat("/dev/null")
    history = History(history_file())
    assert console.readline is not None
    console.readline.add_history("p 1")
    history.save()
    after = os.stat("/dev/null")
    assert (after.st_mode, after.st_uid, after.st_gid) == (
        before.st_mode, before.st_uid, before.st_gid
    )  # fmt: skip


def test_a_link_in_the_historys_place_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "someone-elses-file"
    target.write_text("theirs\n")
    target.chmod(0o644)
    (tmp_path / "history").symlink_to(target)
    assert console.readline is not None
    console.readline.add_history("p secret_token")
    History(tmp_path / "history").save()
    assert target.read_text() == "theirs\n" and stat.S_IMODE(target.stat().st_mode) == 0o644
