"""The connection file: how raydap's own clients on this machine find a running bridge and its
token without anyone copying a secret.

``raydap serve`` writes ``{"url", "dap_port", "token", "pid"}`` as JSON, mode 0600 in a 0700
directory, one file per bridge, and removes it on exit (as Jupyter's runtime files). With
``--share-dir`` it writes a copy without the token there too, for a team (docs/deploy.md). Clients
take the file whose ``url`` they were given, or the only live one; a file whose bridge process
is gone is ignored, and so is one whose pid now belongs to a process that started after it.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

import psutil
from pydantic import BaseModel, ValidationError

from raydap.live import private

#: Larger files are not ours.
MAX_BYTES = 64 * 1024


class Connection(BaseModel):
    url: str
    dap_port: int
    token: str | None = None
    pid: int


def write(directory: Path, connection: Connection) -> Path:
    """Write the file of this bridge; only its owner can read it (it holds a debug token)."""
    private.make_folder(directory)
    path = directory / f"bridge-{connection.pid}.json"
    private.write_whole(path, connection.model_dump_json().encode())
    return path


def write_shared(directory: Path, connection: Connection) -> Path:
    """A copy without the token for a team (``--share-dir``): readable by the folder's group,
    whose members' ``raydap`` commands then find this bridge and use a token of their own
    (``raydap login``). The folder is the operator's (made by systemd's RuntimeDirectory)."""
    found = os.lstat(directory)
    if stat.S_ISLNK(found.st_mode) or not stat.S_ISDIR(found.st_mode):
        raise private.NotPrivate(f"{directory} is a link or not a folder")
    path = directory / f"bridge-{connection.pid}.json"
    partial = directory / f".bridge-{connection.pid}.json.part"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(partial)
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o640)
    try:
        os.fchown(descriptor, -1, found.st_gid)
        os.fchmod(descriptor, 0o640)
        os.write(
            descriptor, connection.model_copy(update={"token": None}).model_dump_json().encode()
        )
    finally:
        os.close(descriptor)
    os.replace(partial, path)
    return path


def remove(path: Path) -> None:
    path.unlink(missing_ok=True)


#: Slack between the clocks of a process's start and a file's time, in seconds.
CLOCK_SLACK = 1.0


def _alive(pid: int, written_at: float) -> bool:
    """Whether the bridge that wrote a file at ``written_at`` still runs: a process with its pid
    that started before then (a bridge that was killed leaves its file, and its pid is reused
    by whatever starts later, often a Ray worker)."""
    try:
        process = psutil.Process(pid)
        started = process.create_time()
        return (
            bool(process.status() != psutil.STATUS_ZOMBIE) and started <= written_at + CLOCK_SLACK
        )
    except psutil.Error:
        return False


def live_connections(directory: Path) -> list[Connection]:
    """Every readable file of a bridge that is still running, newest first."""
    found: list[tuple[float, Connection]] = []
    for path in directory.glob("bridge-*.json"):
        try:
            if path.stat().st_size > MAX_BYTES:
                continue
            connection = Connection.model_validate_json(path.read_bytes())
            modified = path.stat().st_mtime
        except (OSError, ValidationError):
            continue
        if _alive(connection.pid, modified):
            found.append((modified, connection))
    return [connection for _, connection in sorted(found, key=lambda item: -item[0])]


def find(directory: Path, url: str | None) -> Connection | None:
    """The live bridge at ``url``, or, with no url, the only live bridge (None if several)."""
    connections = live_connections(directory)
    if url is not None:
        wanted = url.rstrip("/")
        return next((c for c in connections if c.url.rstrip("/") == wanted), None)
    return connections[0] if len(connections) == 1 else None
