"""Files and folders only their owner can read, made without following links.

Everything raydap writes may hold a secret (a token, an evaluated expression, a captured value),
so each file is opened with ``O_NOFOLLOW`` and made 0600, each folder raydap makes is 0700 with
every parent it makes, and raydap changes the mode only of a regular file or folder of its own
user that is not a link: never of a device (``RAYDAP_HISTORY=/dev/null`` turns the history off
and touches nothing), a link's target, or someone else's file.

Used by the bridge and its clients, and on nodes; it imports nothing of raydap.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import IO, Any


class NotPrivate(OSError):
    """A path raydap will not write to: a link, not a regular file, or another user's."""


def make_folder(path: Path) -> Path:
    """``path`` as an owner-only folder: it and each missing parent made 0700; one that is
    there is checked (a folder of this user, not a link) and tightened to 0700."""
    missing = []
    for parent in (path, *path.parents):
        if os.path.lexists(parent):
            break
        missing.append(parent)
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, 0o700)
    found = os.lstat(path)
    if stat.S_ISLNK(found.st_mode) or not stat.S_ISDIR(found.st_mode):
        raise NotPrivate(f"{path} is a link or not a folder")
    if found.st_uid != os.getuid():
        raise NotPrivate(f"{path} belongs to uid {found.st_uid}")
    if found.st_mode & 0o077:
        os.chmod(path, 0o700)  # checked just above: a folder of ours, not a link
    return path


def open_private(path: Path, mode: str = "a", *, exclusive: bool = False) -> IO[Any]:
    """A file of this user, opened without following a link and made 0600: ``mode`` is ``a``,
    ``w``, ``ab`` or ``wb``. A device, or a file that is not this user's, is refused."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_APPEND if "a" in mode else 0)
    flags |= os.O_EXCL if exclusive else 0
    descriptor = os.open(path, flags, 0o600)
    try:
        found = os.fstat(descriptor)
        if not stat.S_ISREG(found.st_mode) or found.st_uid != os.getuid():
            raise NotPrivate(f"{path} is not a regular file of this user")
        if stat.S_IMODE(found.st_mode) != 0o600:
            os.fchmod(descriptor, 0o600)
        if "w" in mode:
            os.ftruncate(descriptor, 0)
        return os.fdopen(descriptor, mode)
    except BaseException:
        os.close(descriptor)
        raise


def write_whole(path: Path, data: bytes) -> None:
    """``path`` replaced by ``data`` at once (a new 0600 file renamed over it): a reader never
    sees half of it, and a link at ``path`` is replaced, never followed."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.part")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(partial)
    try:
        with open_private(partial, "wb", exclusive=True) as file:
            file.write(data)
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise


def is_own_file(path: Path) -> bool:
    """Whether ``path`` is a regular file of this user (not a link, not a device)."""
    try:
        found = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(found.st_mode) and found.st_uid == os.getuid()
