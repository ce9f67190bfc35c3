"""The directories the bridge writes, made and checked before it starts anything.

On a machine that has never run raydap none of them exists yet (``~/.local/share/raydap/runtime``,
``$XDG_RUNTIME_DIR/raydap``, ``~/.local/state/raydap/hangs`` and ``.../captures``). Each is
made owner-only with its missing parents, or, if it is there, checked to be a directory of this
user that takes a file. One that cannot be used stops the start at once with the path, the
reason and the setting that picks another, rather than failing half-way with a bare
``[Errno 2]``.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from raydap.bridge.server.settings import Settings
from raydap.live import private

#: The longest path a Unix socket can be bound to on Linux (``sun_path`` less its NUL).
UNIX_SOCKET_PATH_MAX = 107


@dataclass(frozen=True)
class Directory:
    path: Path
    #: What the bridge keeps there, for the message.
    purpose: str
    #: The flag and the variable that pick another.
    setting: str


class DirectoryError(Exception):
    """A directory the bridge must write cannot be used; says which, why, and what to set."""

    def __init__(self, directory: Directory, why: str) -> None:
        self.directory = directory
        self.why = why
        super().__init__(
            f"cannot use {directory.path} for {directory.purpose}: {why}. "
            f"Pick another with {directory.setting}."
        )


def private_directory(directory: Directory) -> Path:
    """Make ``directory`` owner-only, or check the one already there: a directory (not a link)
    of this user in which a file can be made. One that others may read is made owner-only."""
    path = directory.path
    try:
        private.make_folder(path)  # each parent it makes owner-only too
    except private.NotPrivate:
        pass  # said below, with the reason and the setting
    except OSError as exc:
        raise DirectoryError(directory, _reason(exc)) from None
    found = os.lstat(path)
    if stat.S_ISLNK(found.st_mode):
        raise DirectoryError(directory, "it is a symbolic link (not followed, for safety)")
    if not stat.S_ISDIR(found.st_mode):
        raise DirectoryError(directory, "a file that is not a directory is in the way")
    if found.st_uid != os.getuid():
        raise DirectoryError(
            directory, f"it belongs to another user (uid {found.st_uid}, you are {os.getuid()})"
        )
    try:
        if found.st_mode & 0o077:
            path.chmod(0o700)
        descriptor, probe = tempfile.mkstemp(dir=path, prefix=".raydap-probe-")
    except OSError as exc:
        raise DirectoryError(directory, _reason(exc)) from None
    os.close(descriptor)
    with contextlib.suppress(OSError):
        os.unlink(probe)
    return path


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def runtime(settings: Settings) -> Directory:
    return Directory(
        settings.runtime_dir,
        "the connection file and the hand-over socket",
        "RAYDAP_RUNTIME_DIR (raydap serve: --runtime-dir)",
    )


def hang_reports(settings: Settings) -> Directory:
    return Directory(
        settings.hang_reports, "hang reports", "RAYDAP_HANG_REPORTS (raydap serve: --hang-reports)"
    )


def captures(settings: Settings) -> Directory:
    return Directory(settings.captures, "captures", "RAYDAP_CAPTURES (raydap serve: --captures)")


def prepare(settings: Settings, *, longest_socket_name: int = 0) -> None:
    """Make every directory this bridge will write, or raise :class:`DirectoryError` for the
    first one that cannot be used. ``longest_socket_name``: the longest name of a Unix socket
    to be bound in the runtime directory (its whole path must fit)."""
    folder = private_directory(runtime(settings))
    longest = len(os.fsencode(folder)) + 1 + longest_socket_name
    if longest_socket_name and longest > UNIX_SOCKET_PATH_MAX:
        raise DirectoryError(
            runtime(settings),
            f"its sockets' paths would be {longest} bytes, over the {UNIX_SOCKET_PATH_MAX} a "
            "Unix socket allows",
        )
    if settings.hang_watch != "off":
        private_directory(hang_reports(settings))
    private_directory(captures(settings))
    if settings.share_dir is not None:
        shared_directory(settings.share_dir)


def shared_directory(path: Path) -> None:
    """The team's folder (``--share-dir``): there, a folder (not a link) this user may write
    to; its group is whoever it shares with, so raydap never changes its mode."""
    directory = Directory(path, "the team's copy of the connection file",
                          "RAYDAP_SHARE_DIR (raydap serve: --share-dir)")  # fmt: skip
    try:
        found = os.lstat(path)
    except OSError as exc:
        raise DirectoryError(directory, _reason(exc) + " (the operator makes it: "
                             "docs/deploy.md)") from None  # fmt: skip
    if stat.S_ISLNK(found.st_mode) or not stat.S_ISDIR(found.st_mode):
        raise DirectoryError(directory, "it is a link or not a folder")
    if not os.access(path, os.W_OK | os.X_OK):
        raise DirectoryError(directory, "this user may not write to it")
    if found.st_mode & 0o002:
        raise DirectoryError(directory, "anyone may write to it (only its owner and group may)")
