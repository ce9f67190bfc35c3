"""Captures: what a worker's frame held at a capture point, kept after the worker is gone.

A live worker sends each capture on the debug connection the bridge holds
(:mod:`raydap.live.captures`); :meth:`Captures.told` checks it (:mod:`.intake`), names the
worker from its record (job, rank, node, pid: never what the worker says of itself) and keeps
it. Captures are bounded three ways, the oldest going first: in all (count and bytes), and per
point (bytes), so that one hot point of a big job cannot push every other capture out; a capture
a point has no room for is dropped and counted.

With a directory (``raydap serve --captures DIR``), each capture is also a file there,
owner-only, read back when the bridge starts (a replaced or restarted bridge lists what the old
one captured); only files named as this module names them, of this user and not links, are
read or removed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import secrets
import stat
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from enum import Enum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from raydap.bridge.captures import intake
from raydap.bridge.workers.records import BreakpointRecord
from raydap.bridge.workers.registry import Registry
from raydap.live.redact import DEFAULT as DEFAULT_REDACTOR
from raydap.live.redact import Redactor

log = logging.getLogger(__name__)

#: The most one capture may take as the worker sent it (its own bound is 32 KB by default).
MAX_CAPTURE_BYTES = 1024 * 1024
#: Messages queued for one events subscriber at most.
MAX_QUEUED = 1000
#: How long a capture waits for its worker's record to know its job and rank, and how many
#: captures may wait at once.
WAIT_FOR_RECORD = 3.0
MAX_WAITING = 256
_FILE = re.compile(r"^cap-[0-9a-f]{12}\.json$")
_PART = re.compile(r"^\.cap-[0-9a-f]{12}\.json\.part$")


class CaptureKind(str, Enum):
    #: Taken at a capture point; the worker ran on.
    POINT = "point"
    #: Taken of a post-mortem stop, before the worker was let go.
    EXCEPTION = "exception"


class CaptureSummary(BaseModel):
    """A capture as a list shows it."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    id: str = Field(pattern=r"^cap-[0-9a-f]{12}$")
    kind: CaptureKind
    job: str | None = None
    #: The record id of the worker it was taken in.
    worker: str
    rank: int | None = None
    node: str | None = None
    pid: int | None = None
    #: When, in seconds since the epoch (the worker's clock).
    time: float
    path: str
    line: int
    function: str
    #: The capture point's id, for a point's capture.
    point: str | None = None
    #: ``Type: message`` of the exception, for an exception's capture.
    exception: str | None = None
    #: Whether a bound cut it short (frames, depth, items or bytes; each cut is marked).
    truncated: bool = False
    #: How many times the worker had reached the point's line.
    hit: int | None = None


class Capture(CaptureSummary):
    """A whole capture: its frames, innermost first, each with its source lines and, near the
    top, its locals (values as :mod:`raydap.live.capture_values` reads them)."""

    frames: list[dict[str, Any]]
    thread: str | None = None
    #: What taking it cost the worker: wall time, and its thread's CPU time.
    cost_ms: float | None = None
    cpu_ms: float | None = None

    def summary(self) -> CaptureSummary:
        return CaptureSummary.model_validate(self.model_dump(include=_SUMMARY_FIELDS))


_SUMMARY_FIELDS = set(CaptureSummary.model_fields)


class Captures:
    """Every capture the bridge keeps, oldest first."""

    def __init__(
        self,
        registry: Registry,
        directory: Path | None = None,
        *,
        most: int = 10_000,
        most_bytes: int = 256 * 2**20,
        point_bytes: int = 64 * 2**20,
        redactor: Redactor = DEFAULT_REDACTOR,
        wait_for_record: float = WAIT_FOR_RECORD,
    ) -> None:
        """``redactor``: what a capture's values hide, whatever the worker hid already (its
        raydap may be older, or not given the project's own patterns)."""
        self.registry = registry
        self.redactor = redactor
        self.wait_for_record = wait_for_record
        self.directory = directory
        self.most, self.most_bytes, self.point_bytes = most, most_bytes, point_bytes
        self._kept: OrderedDict[str, tuple[Capture, int]] = OrderedDict()
        self._bytes = 0
        self._point_bytes: dict[str, int] = {}
        #: Points a worker turned off, and why (the worker's own words).
        self.disabled: dict[str, str] = {}
        self.taken = 0
        self.dropped = 0
        #: Capture events refused: past a bound, or for a point not set or not this worker's.
        self.refused = 0
        #: The settings of a capture point that is set (``job``, ``rank``...), or None: a
        #: worker's capture names a point; the point says whose captures it takes.
        self.point_of: Callable[[str], dict[str, Any] | None] = lambda point: None
        self._waiting: set[asyncio.Task[None]] = set()
        #: Told of each capture kept, and of each point turned off (``(None, point)``).
        self.listeners: list[Callable[[CaptureSummary | None, str | None], None]] = []
        #: The events feed's subscribers: each gets a message a capture or a point turned off
        #: (dropped for one that reads too slowly: the listing stays whole).
        self._subscribers: set[asyncio.Queue[dict[str, Any]]] = set()

    # -- in ---------------------------------------------------------------------------------

    def told(self, rid: str, body: object) -> None:
        """A worker's capture event: kept if it reads as one within the bounds
        (:mod:`.intake`), names a point that applies to the worker, and has room. A worker
        whose record does not know its job yet (held a moment ago), or its rank where the
        worker says it has one, is waited for a little; then it is kept with what is known."""
        try:
            told = intake.check(body)
        except intake.Refused as exc:
            self._refuse(rid, str(exc))
            return
        if told.point is not None and self.point_of(told.point) is None:
            self._refuse(rid, f"capture point {told.point} is not set")
            return
        # The worker's claim of a rank is no fact; it only says a rank is worth waiting for.
        ranked = isinstance(body, dict) and body.get("rank") is not None
        record = self.registry.get(rid)
        if _named(record, ranked) or len(self._waiting) >= MAX_WAITING:
            self._take(rid, told, record)
            return
        try:
            waiting = asyncio.get_running_loop().create_task(
                self._take_when_named(rid, told, record, ranked)
            )
        except RuntimeError:  # no loop (a test's direct call): what the record knows now
            self._take(rid, told, record)
            return
        self._waiting.add(waiting)
        waiting.add_done_callback(self._waiting.discard)

    async def _take_when_named(
        self, rid: str, told: intake.Told, record: BreakpointRecord | None, ranked: bool
    ) -> None:
        """The record as it is once named, or as it last was (a worker let go right after its
        capture leaves the registry: its capture is named by its last record)."""
        deadline = time.monotonic() + self.wait_for_record
        while time.monotonic() < deadline and not _named(record, ranked):
            await asyncio.sleep(0.1)
            record = self.registry.get(rid) or record
        self._take(rid, told, record)

    def _take(self, rid: str, told: intake.Told, record: BreakpointRecord | None) -> None:
        job = record.job_id if record else None
        rank = record.rank if record else None
        point = told.point
        if point is not None:
            settings = self.point_of(point)
            if settings is None:
                self._refuse(rid, f"capture point {point} is not set")
                return
            for name, wanted, have in (("job", settings.get("job"), job),
                                       ("rank", settings.get("rank"), rank)):  # fmt: skip
                if wanted is not None and wanted != have:
                    self._refuse(rid, f"capture point {point} is for {name} {wanted}, and "
                                 f"this worker's {name} is {have}")  # fmt: skip
                    return
            if told.disabled is not None and point not in self.disabled:
                self.disabled = {p: why for p, why in self.disabled.items() if self.point_of(p)}
                self.disabled[point] = told.disabled
                self._tell(None, point)
        capture = self._read(rid, told, record)
        if capture is not None:
            self.add(capture)

    def _refuse(self, rid: str, why: str) -> None:
        self.refused += 1
        log.info("%s: a capture refused: %s", rid, why)

    def forget_point(self, point: str) -> None:
        """A point was cleared: a later point of the same id starts afresh."""
        self.disabled.pop(point, None)

    def _read(self, rid: str, told: intake.Told, record: BreakpointRecord | None) -> Capture | None:
        if not told.frames:
            return None
        job = record.job_id if record else None
        rank = record.rank if record else None
        top = told.frames[0]
        try:
            return Capture(
                id=new_id(), kind=CaptureKind.POINT if told.point else CaptureKind.EXCEPTION,
                job=job, worker=rid, rank=rank, node=record.node_ip if record else None,
                pid=record.pid if record else None, time=told.time,
                path=top.path, line=top.line, function=top.function,
                point=told.point, exception=told.exception, truncated=told.cut,
                hit=told.hit, frames=[self._redacted(f) for f in told.frames],
                thread=told.thread, cost_ms=told.cost_ms, cpu_ms=told.cpu_ms,
            )  # fmt: skip
        except ValidationError as exc:
            self._refuse(rid, f"it does not read as a capture: {exc.errors()[:1]}")
            return None

    def _redacted(self, frame: intake.Frame) -> dict[str, Any]:
        """A frame as kept: its locals' secrets hidden (never its source: that is code)."""
        kept = frame.model_dump(exclude_none=True)
        if frame.locals is not None:
            kept["locals"] = self.redactor.nodes(frame.locals)
        return kept

    def add(self, capture: Capture) -> bool:
        """Keep ``capture`` (and write it down); False when its point has no room left."""
        text = capture.model_dump_json()
        size = len(text)
        point = capture.point or ""
        if size > MAX_CAPTURE_BYTES or self._point_bytes.get(point, 0) + size > self.point_bytes:
            self.dropped += 1
            return False
        self._kept[capture.id] = (capture, size)
        self._bytes += size
        self._point_bytes[point] = self._point_bytes.get(point, 0) + size
        self.taken += 1
        self._write(capture.id, text)
        while len(self._kept) > self.most or self._bytes > self.most_bytes:
            self._remove(next(iter(self._kept)))
        self._tell(capture.summary(), capture.point)
        return True

    # -- out --------------------------------------------------------------------------------

    def get(self, capture_id: str) -> Capture | None:
        found = self._kept.get(capture_id)
        return found[0] if found else None

    def summaries(
        self,
        *,
        job: str | None = None,
        rank: int | None = None,
        point: str | None = None,
        kind: CaptureKind | None = None,
    ) -> list[CaptureSummary]:
        """Kept captures, oldest first, that match every filter given."""
        return [c.summary() for c in self.matching(job=job, rank=rank, point=point, kind=kind)]

    def matching(
        self,
        *,
        job: str | None = None,
        rank: int | None = None,
        point: str | None = None,
        kind: CaptureKind | None = None,
    ) -> Iterator[Capture]:
        for capture, _ in self._kept.values():
            if (
                (job is None or capture.job == job)
                and (rank is None or capture.rank == rank)
                and (point is None or capture.point == point)
                and (kind is None or capture.kind == kind)
            ):
                yield capture

    def __len__(self) -> int:
        return len(self._kept)

    def counts(self) -> dict[str, int]:
        """Captures kept per point id."""
        counted: dict[str, int] = {}
        for capture, _ in self._kept.values():
            if capture.point:
                counted[capture.point] = counted.get(capture.point, 0) + 1
        return counted

    # -- kept on disk -----------------------------------------------------------------------

    def load(self) -> int:
        """Read back the captures a previous bridge wrote, oldest first; returns how many."""
        if self.directory is None:
            return 0
        found: list[Capture] = []
        for path in self.directory.iterdir():
            if _PART.match(path.name):  # a write a killed bridge never finished
                with contextlib.suppress(OSError):
                    if os.lstat(path).st_uid == os.getuid():
                        path.unlink()
                continue
            if not _FILE.match(path.name):
                continue
            try:
                info = os.lstat(path)
                if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
                    continue
                if info.st_size > MAX_CAPTURE_BYTES:
                    continue
                found.append(Capture.model_validate_json(path.read_bytes()))
            except (OSError, ValidationError) as exc:
                log.info("capture %s not read back: %s", path.name, exc)
        for capture in sorted(found, key=lambda c: c.time):
            size = len(capture.model_dump_json())
            self._kept[capture.id] = (capture, size)
            self._bytes += size
            point = capture.point or ""
            self._point_bytes[point] = self._point_bytes.get(point, 0) + size
        while len(self._kept) > self.most or self._bytes > self.most_bytes:
            self._remove(next(iter(self._kept)))
        return len(self._kept)

    def _write(self, capture_id: str, text: str) -> None:
        if self.directory is None:
            return
        path = self.directory / f"{capture_id}.json"
        # Written whole, then renamed: a bridge killed mid-write leaves no half a capture.
        part = self.directory / f".{capture_id}.json.part"
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
            descriptor = os.open(part, flags, 0o600)
            with os.fdopen(descriptor, "w") as file:
                file.write(text)
            os.replace(part, path)
        except OSError as exc:
            log.warning("capture %s kept in memory only: %s", capture_id, exc)
            with contextlib.suppress(OSError):
                part.unlink()

    def _remove(self, capture_id: str) -> None:
        capture, size = self._kept.pop(capture_id)
        self._bytes -= size
        point = capture.point or ""
        self._point_bytes[point] = self._point_bytes.get(point, 0) - size
        if self._point_bytes[point] <= 0:
            del self._point_bytes[point]
        if self.directory is not None:
            with contextlib.suppress(OSError):
                (self.directory / f"{capture_id}.json").unlink()

    def close(self) -> None:
        """Captures still waiting for their worker's name are not kept."""
        for waiting in list(self._waiting):
            waiting.cancel()

    def subscribe(self) -> asyncio.Queue[dict[str, Any]]:
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(MAX_QUEUED)
        self._subscribers.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[dict[str, Any]]) -> None:
        self._subscribers.discard(queue)

    def _tell(self, summary: CaptureSummary | None, point: str | None) -> None:
        message: dict[str, Any] = (
            {"kind": "capture", "capture": summary.model_dump(mode="json")}
            if summary is not None
            else {
                "kind": "capture_point_disabled",
                "point": point,
                "reason": self.disabled.get(point or ""),
            }
        )
        for queue in list(self._subscribers):
            with contextlib.suppress(asyncio.QueueFull):
                queue.put_nowait(message)
        for listener in list(self.listeners):
            try:
                listener(summary, point)
            except Exception:  # one listener's bug never loses a capture
                log.exception("a capture listener failed")


def _named(record: BreakpointRecord | None, ranked: bool) -> bool:
    """Whether a worker's record names what its capture needs: its job, and its rank where the
    worker has one."""
    return (
        record is not None and record.job_id is not None and (record.rank is not None or not ranked)
    )


def new_id() -> str:
    return f"cap-{secrets.token_hex(6)}"
