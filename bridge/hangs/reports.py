"""Hang reports: what a suspected hang looked like, kept after the job and the bridge are gone.

Each new suspected-hang verdict of a job writes one directory under ``raydap serve
--hang-reports DIR`` (by default ``$XDG_STATE_HOME/raydap/hangs``, else
``~/.local/state/raydap/hangs``: it survives reboots, unlike the runtime directory):

- ``verdict.json``: the verdict, as ``GET /api/v1/hangs`` gave it;
- ``stacks.json``: the job's merged stacks with locals, as ``GET /api/v1/stacks?locals=1``;
- ``rank_<N>``: each rank's Flight Recorder in torch's own pickle format, so that
  ``python -m torch.distributed.flight_recorder.fr_trace DIR`` reads the directory; ranks of
  the job's other worlds (verl's worker groups) in ``other-worlds/<K>/rank-<N>``
  (``fr_trace DIR/other-worlds/K -p rank-``), named so that they do not mix with the first.
  A job whose groups used two backends (``"cpu:gloo,cuda:nccl"``) gets one such set each,
  ``gloo/`` and ``nccl/`` (``fr_trace DIR/nccl``): each backend numbers its own collectives.

The pickles are written here from what the bridge read and checked; the group membership torch's
analyzer ``eval``s (``pg_config``'s ``ranks``) is written from the validated ranks, and its
keys are the group names the entries use (torch 2.13's own gloo dumps key the default group
``''``, which its analyzer cannot read). Files are the owner's only; the directory is bounded
(reports and bytes, oldest removed first); anything in it the bridge did not write, or that
another user owns, or that is a link, is never read, served or removed.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import re
import secrets
import shutil
import stat
import tarfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from raydap.bridge.hangs.desync import RankDump
from raydap.live import private
from raydap.protocol.collectives import Entry

MARKER = "verdict.json"
MAX_VERDICT_BYTES = 4 * 1024 * 1024
_NAME = re.compile(r"^(?P<job>[0-9A-Za-z_-]{1,64})-(?P<at>\d{8}T\d{6}Z)-[0-9a-f]{6}$")
_JOB = re.compile(r"[^0-9A-Za-z_-]")


def default_root() -> Path:
    state = os.environ.get("XDG_STATE_HOME")
    base = Path(state) if state else Path.home() / ".local" / "state"
    return base / "raydap" / "hangs"


def torch_dump(dump: RankDump) -> dict[str, Any]:
    """One rank's recorder as torch's pickle dump holds it."""
    groups = {
        g.name: {"name": g.name, "desc": g.desc, "ranks": repr(g.ranks())}
        for g in dump.identity.groups
    }
    return {
        "version": dump.recorder.version or "2.10",
        "comm_lib_version": "",
        "pg_config": groups,
        "pg_status": {
            name: status.model_dump() for name, status in dump.recorder.pg_status.items()
        },
        "entries": [_torch_entry(entry) for entry in dump.recorder.entries],
    }


def _torch_entry(entry: Entry) -> dict[str, Any]:
    """An entry as torch writes it: lists where it has lists, its group as a tuple."""
    fields = entry.model_dump()
    for name in ("input_sizes", "output_sizes"):
        fields[name] = [list(sizes) for sizes in fields[name]]
    for name in ("input_dtypes", "output_dtypes", "frames"):
        fields[name] = list(fields[name])
    fields["process_group"] = tuple(entry.process_group)
    return fields


class HangReports:
    def __init__(self, root: Path, *, max_reports: int = 50, max_bytes: int = 200 * 2**20) -> None:
        self.root = root
        self.max_reports = max_reports
        self.max_bytes = max_bytes

    # -- writing ----------------------------------------------------------------------------

    def write(
        self,
        job: str,
        verdict: dict[str, Any],
        stacks: dict[str, Any] | None,
        dumps: Sequence[RankDump],
        world: str | None,
    ) -> Path:
        """A new report of ``job``; ``world``: the world whose ranks go at its top."""
        self._make_root()
        at = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        folder = self.root / f"{_JOB.sub('_', job)[:64] or 'job'}-{at}-{secrets.token_hex(3)}"
        folder.mkdir(mode=0o700)
        # One dump set a backend where the job used several: torch's analyzer must never see
        # a gloo #3 and an NCCL #3 of one group as one collective.
        backends = sorted({dump.backend for dump in dumps})
        for backend in backends:
            home = folder / backend if len(backends) > 1 else folder
            home.mkdir(mode=0o700, exist_ok=True)
            _write_set(home, [d for d in dumps if d.backend == backend], world)
        if stacks is not None:
            _write(folder / "stacks.json", json.dumps(stacks, indent=1).encode())
        # The marker last: a directory without it is a report being written (or not ours).
        report = {**verdict, "report": str(folder)}
        _write(folder / MARKER, json.dumps(report, indent=1).encode())
        self.prune()
        return folder

    def _make_root(self) -> None:
        try:
            private.make_folder(self.root)  # its parents too, each made owner-only
        except private.NotPrivate as exc:
            raise PermissionError(f"{exc}: not writing there") from None

    def prune(self) -> None:
        """Oldest first, until at most ``max_reports`` and ``max_bytes`` are left; the newest
        report stays whatever its size (the verdict names it)."""
        reports = sorted(self._reports(), key=lambda r: r[1])
        sizes = {path: _size(path) for path, _ in reports}
        total = sum(sizes.values())
        while len(reports) > 1 and (len(reports) > self.max_reports or total > self.max_bytes):
            path, _ = reports.pop(0)
            shutil.rmtree(path, ignore_errors=True)
            total -= sizes[path]

    # -- reading ----------------------------------------------------------------------------

    def _reports(self, job: str | None = None) -> list[tuple[Path, tuple[str, int]]]:
        """Reports the bridge wrote, with their time, oldest first: ours by name, owner and
        marker; anything else is left alone."""
        if not self.root.is_dir() or self.root.is_symlink():
            return []
        found = []
        for path in self.root.iterdir():
            named = _NAME.match(path.name)
            if named is None or (job is not None and named["job"] != _JOB.sub("_", job)):
                continue
            try:
                info = os.lstat(path)
                marker = os.lstat(path / MARKER)
            except OSError:
                continue
            if (
                stat.S_ISDIR(info.st_mode) and stat.S_ISREG(marker.st_mode)
                and info.st_uid == marker.st_uid == os.getuid()
            ):  # fmt: skip
                found.append((path, (named["at"], marker.st_mtime_ns)))
        return sorted(found, key=lambda r: r[1])

    def latest(self, job: str) -> Path | None:
        found = self._reports(job)
        return found[-1][0] if found else None

    def verdict(self, report: Path) -> dict[str, Any]:
        """A report's verdict, read back (bounded)."""
        with open(report / MARKER, "rb", opener=_no_links) as file:
            data = file.read(MAX_VERDICT_BYTES + 1)
        if len(data) > MAX_VERDICT_BYTES:
            raise ValueError(f"{report / MARKER} is over {MAX_VERDICT_BYTES} bytes")
        found = json.loads(data)
        if not isinstance(found, dict):
            raise ValueError(f"{report / MARKER} is not a verdict")
        return found

    def archive(self, report: Path) -> bytes:
        """The report as one ``.tar.gz``: its regular files, no links followed."""
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
            for path in sorted(report.rglob("*")):
                info = os.lstat(path)
                if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
                    continue
                with open(path, "rb", opener=_no_links) as file:
                    entry = tar.gettarinfo(arcname=f"{report.name}/{path.relative_to(report)}",
                                           fileobj=file)  # fmt: skip
                    entry.uid = entry.gid = 0
                    entry.uname = entry.gname = ""
                    tar.addfile(entry, file)
        return buffer.getvalue()


def _write_set(home: Path, dumps: Sequence[RankDump], world: str | None) -> None:
    """One backend's dumps: the world's ranks as ``rank_N`` (what ``fr_trace -p rank_``
    reads), other worlds' apart under ``other-worlds/``."""
    others: dict[str | None, int] = {}
    for dump in dumps:
        data = pickle.dumps(torch_dump(dump), protocol=4)
        if dump.identity.world == world:
            _write(home / f"rank_{dump.identity.rank}", data)
        else:
            index = others.setdefault(dump.identity.world, len(others) + 1)
            sub = home / "other-worlds" / str(index)
            private.make_folder(sub)
            _write(sub / f"rank-{dump.identity.rank}", data)
    if others:
        names = {str(i): w for w, i in others.items()}
        _write(home / "other-worlds" / "worlds.json", json.dumps(names).encode())


def _write(path: Path, data: bytes) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(descriptor, "wb") as file:
        file.write(data)


def _no_links(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NOFOLLOW)


def _size(path: Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue
    return total
