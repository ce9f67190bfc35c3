"""The pdb's history on a machine that never ran raydap: made owner-only where XDG says, or
said (once, with the variable to set) where it cannot be written."""

from __future__ import annotations

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
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert "p secret_token" in path.read_text()


def test_a_history_that_cannot_be_written_is_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "state").write_text("a file where a directory should be")
    History(tmp_path / "state" / "raydap" / "history").save()
    said = capsys.readouterr().err
    assert "history not kept" in said and "RAYDAP_HISTORY" in said
