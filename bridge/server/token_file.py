"""Editing the bridge's token file (``raydap token add|list|remove``): a person each, with
a role, on a head shared by a team.

Edits keep the file's owner, group and mode (the bridge's user reads it; an operator edits
it, often as root), its comments and the order of its lines. The new text is written to a
file beside it and renamed over it, so the running bridge, which reads it again when it
changes (:class:`TokenFileWatch`), never sees half of it. Two edits at once are serialized
by a lock on the file itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import re
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path

from raydap.bridge.server.auth import Role, Token, TokenError, load_tokens

log = logging.getLogger(__name__)

#: A token's name: what the audit log and ``list`` show.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")


class TokenFileError(ValueError):
    """An edit that cannot be made; the message says why."""


def _fields(line: str) -> list[str]:
    return line.split("#", 1)[0].split()


def listed(path: Path) -> list[Token]:
    """The file's tokens, checked as the bridge checks them."""
    return load_tokens(path, None) if path.exists() else []


def add(path: Path, name: str, role: Role) -> str:
    """Give ``name`` a new token of ``role``; its secret (shown once, never stored elsewhere)."""
    if not NAME.fullmatch(name):
        raise TokenFileError(
            f"{name!r} is not a token name: letters, digits and . _ @ - (at most 64)"
        )
    if name == "env":
        raise TokenFileError("'env' names RAYDAP_TOKEN's token: choose another name")
    secret = secrets.token_urlsafe(32)
    with _editing(path) as lines:
        if any(_fields(line)[:1] == [name] for line in lines):
            raise TokenFileError(f"{name!r} has a token already: remove it first")
        lines.append(f"{name} {role} {secret}")
    return secret


def remove(path: Path, name: str) -> None:
    with _editing(path) as lines:
        kept = [line for line in lines if _fields(line)[:1] != [name]]
        if len(kept) == len(lines):
            raise TokenFileError(f"no token named {name!r} in {path}")
        lines[:] = kept


@contextlib.contextmanager
def _editing(path: Path) -> Iterator[list[str]]:
    """The file's lines to change in place; written back whole, with its owner, group and
    mode, if the block ends without an error and the result is a valid token file."""
    created = not path.exists()
    if created:  # a new file: only its owner reads it
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
    descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        found = os.fstat(descriptor)
        lines = path.read_text().splitlines()
        yield lines
        text = "".join(f"{line}\n" for line in lines)
        partial = path.with_name(f".{path.name}.{os.getpid()}.part")
        out = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.write(out, text.encode())
            os.fchown(out, found.st_uid, found.st_gid)
            os.fchmod(out, found.st_mode & 0o7777)
            os.fsync(out)
        finally:
            os.close(out)
        try:
            load_tokens(partial, None)  # never leave a file the bridge cannot read
            os.replace(partial, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(partial)
    except TokenError as exc:
        raise TokenFileError(str(exc)) from None
    finally:
        os.close(descriptor)


class TokenFileWatch:
    """The running bridge's view of its token file: read again when it changes (looked at
    every ``interval`` seconds), so that a token added or removed counts at once and no paused
    worker is let go. A file that cannot be read keeps the tokens read last, with a warning."""

    def __init__(
        self,
        path: Path,
        env_secret: str | None,
        apply: Callable[[list[Token]], None],
        interval: float = 1.0,
    ) -> None:
        self.path, self.env_secret, self.apply, self.interval = path, env_secret, apply, interval
        self._seen = self._stamp()

    def _stamp(self) -> tuple[int, int, int] | None:
        try:
            found = os.stat(self.path)
        except OSError:
            return None
        return found.st_ino, found.st_mtime_ns, found.st_size

    def check(self) -> bool:
        """Read the file again if it changed; whether the tokens were replaced."""
        stamp = self._stamp()
        if stamp == self._seen:
            return False
        self._seen = stamp
        try:
            tokens = load_tokens(self.path, self.env_secret)
        except TokenError as exc:
            log.warning("token file changed but cannot be used (%s): the tokens stay as they "
                        "were", exc)  # fmt: skip
            return False
        self.apply(tokens)
        log.info("token file %s read again: %s", self.path,
                 ", ".join(f"{t.name} ({t.role})" for t in tokens) or "no tokens")  # fmt: skip
        return True

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            self.check()
