"""The directories the bridge writes: made owner-only on a machine that never ran raydap, and
refused with the path, the reason and the setting when they cannot be used."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from raydap.bridge.server import directories
from raydap.bridge.server.directories import Directory, DirectoryError
from raydap.bridge.server.settings import Settings


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def settings(tmp_path: Path, **given: object) -> Settings:
    defaults: dict[str, object] = {
        "runtime_dir": tmp_path / "home" / ".local" / "share" / "raydap" / "runtime",
        "hang_reports": tmp_path / "home" / ".local" / "state" / "raydap" / "hangs",
    }
    return Settings(**{**defaults, **given})


def test_missing_directories_are_made_owner_only_with_their_parents(tmp_path: Path) -> None:
    chosen = settings(tmp_path)
    directories.prepare(chosen)
    assert mode(chosen.runtime_dir) == 0o700
    assert mode(chosen.hang_reports) == 0o700
    assert list(chosen.runtime_dir.iterdir()) == []  # the probe file is gone


def test_an_existing_directory_others_may_read_is_made_owner_only(tmp_path: Path) -> None:
    chosen = settings(tmp_path)
    chosen.runtime_dir.mkdir(parents=True, mode=0o755)
    chosen.runtime_dir.chmod(0o755)
    (chosen.runtime_dir / "kept").write_text("a file already there stays")
    directories.prepare(chosen)
    assert mode(chosen.runtime_dir) == 0o700
    assert (chosen.runtime_dir / "kept").read_text() == "a file already there stays"


def test_no_hang_watch_no_hang_reports_directory(tmp_path: Path) -> None:
    chosen = settings(tmp_path, hang_watch="off")
    directories.prepare(chosen)
    assert not chosen.hang_reports.exists()


def test_a_file_in_the_way_is_named_with_the_setting(tmp_path: Path) -> None:
    (tmp_path / "home").write_text("not a directory")
    with pytest.raises(DirectoryError) as raised:
        directories.prepare(settings(tmp_path))
    message = str(raised.value)
    assert str(tmp_path / "home" / ".local") in message
    assert "Not a directory" in message
    assert "RAYDAP_RUNTIME_DIR" in message and "--runtime-dir" in message


def test_the_directory_itself_a_file(tmp_path: Path) -> None:
    target = tmp_path / "runtime"
    target.write_text("")
    with pytest.raises(DirectoryError, match="a file that is not a directory is in the way"):
        directories.private_directory(Directory(target, "tests", "X"))


def test_a_link_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "runtime").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(DirectoryError, match="symbolic link"):
        directories.private_directory(Directory(tmp_path / "runtime", "tests", "X"))


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to give a directory to another user")
def test_another_users_directory_is_refused(tmp_path: Path) -> None:
    chosen = settings(tmp_path)
    chosen.hang_reports.mkdir(parents=True)
    os.chown(chosen.hang_reports, 65534, 65534)
    with pytest.raises(DirectoryError) as raised:
        directories.prepare(chosen)
    assert "belongs to another user (uid 65534" in str(raised.value)
    assert "RAYDAP_HANG_REPORTS" in str(raised.value)


@pytest.mark.skipif(os.getuid() == 0, reason="root writes through any mode")
def test_a_directory_that_takes_no_file_is_refused(tmp_path: Path) -> None:
    chosen = settings(tmp_path)
    chosen.runtime_dir.mkdir(parents=True)
    chosen.runtime_dir.chmod(0o500)
    try:
        with pytest.raises(DirectoryError, match="Permission denied"):
            directories.prepare(chosen)
    finally:
        chosen.runtime_dir.chmod(0o700)


def test_a_socket_path_too_long_for_unix_is_said(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    with pytest.raises(DirectoryError, match="over the 107 a Unix socket allows"):
        directories.prepare(settings(tmp_path, runtime_dir=deep), longest_socket_name=20)
