"""Owner-only files and folders, made without following links: the audit log, the connection
file, capture points, hang reports, captures and the pdb's history all go through these."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from raydap.bridge.server.audit import AuditLog
from raydap.bridge.server.connection_file import Connection, write
from raydap.live import private


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_every_folder_made_is_owner_only_and_one_there_is_tightened(tmp_path: Path) -> None:
    deep = tmp_path / "a" / "b" / "c"
    private.make_folder(deep)
    assert [mode(p) for p in (tmp_path / "a", tmp_path / "a" / "b", deep)] == [0o700] * 3
    open_folder = tmp_path / "shared"
    open_folder.mkdir(mode=0o777)
    open_folder.chmod(0o777)
    private.make_folder(open_folder)
    assert mode(open_folder) == 0o700
    (tmp_path / "link").symlink_to(open_folder)
    with pytest.raises(private.NotPrivate):
        private.make_folder(tmp_path / "link")


def test_a_file_is_never_opened_through_a_link_nor_a_device_made_private(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_text("")
    (tmp_path / "link").symlink_to(target)
    with pytest.raises(OSError):
        private.open_private(tmp_path / "link")
    before = os.stat("/dev/null").st_mode
    with pytest.raises(private.NotPrivate):
        private.open_private(Path("/dev/null"))
    assert os.stat("/dev/null").st_mode == before


def test_the_audit_log_is_owner_only_and_a_link_in_its_place_is_refused(tmp_path: Path) -> None:
    """Found on main: opened with a plain open(path, "a"): umask's mode, and links followed."""
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    log.record("evaluate", client="127.0.0.1", token="alice", expression="secret")
    log.close()
    assert mode(path) == 0o600 and "secret" in path.read_text()
    (tmp_path / "other").write_text("")
    (tmp_path / "linked.jsonl").symlink_to(tmp_path / "other")
    with pytest.raises(OSError):
        AuditLog(tmp_path / "linked.jsonl")


def test_a_file_rewritten_whole_replaces_a_link_and_never_writes_its_target(
    tmp_path: Path,
) -> None:
    target = tmp_path / "target"
    target.write_text("theirs")
    folder = tmp_path / "runtime"
    folder.mkdir(mode=0o700)
    (folder / "bridge-1.json").symlink_to(target)
    written = write(folder, Connection(url="http://127.0.0.1:1", dap_port=2, token="t", pid=1))
    assert target.read_text() == "theirs"
    assert not written.is_symlink() and mode(written) == 0o600
