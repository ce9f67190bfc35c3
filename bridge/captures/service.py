"""What a person can do with capture points and captures, behind every door but DAP.

The HTTP API, the CLI (through it), the MCP tools and the web page call this; a DAP session
sets capture points as breakpoints of its own (:mod:`raydap.adapter.captures.points`) and opens
a capture as a read-only stop. Answers are models and plain values; failures are
:class:`~raydap.adapter.errors.WorkerError` with a kind each door translates once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from raydap.adapter import AttachError
from raydap.adapter.captures import paths as capture_paths
from raydap.adapter.captures.mux import CaptureFeed
from raydap.adapter.captures.points import MODE, SETTINGS, riding
from raydap.adapter.errors import Kind, WorkerError
from raydap.bridge.captures.points import Points
from raydap.bridge.captures.store import Capture, CaptureKind, Captures, CaptureSummary


class CapturePoint(BaseModel):
    """A capture point as every door lists it."""

    model_config = ConfigDict(frozen=True)

    id: str
    path: str
    line: int
    condition: str | None = None
    rank: int | None = None
    #: The rank set it is given to (docs/rank-sets.md); None: every rank.
    ranks: str | None = None
    job: str | None = None
    #: Who set it: the owner's name, or "a DAP session" for an editor's or debugger's.
    owner: str
    interval: float
    most: int
    budget_ms: float
    #: When it stops capturing (seconds since the epoch; 0: never).
    until: float
    expired: bool
    captures: int
    #: Why it turned itself off (its worker's words), if it did.
    disabled: str | None = None


@dataclass
class CaptureService:
    captures: Captures
    points: Points
    #: The breakpoint lists live workers were given, kept for later ones (DAP sessions' points
    #: are found there): ``(job, command, path) -> arguments``.
    configuration: dict[tuple[str, str, str], dict[str, Any]]

    def __post_init__(self) -> None:
        # A worker's capture is kept only for a point that is set, and that is its own.
        self.captures.point_of = self.point_settings

    def _set(self) -> dict[str, tuple[str, str, dict[str, Any]]]:
        """Every point set, by any door: id -> (owner, path, point)."""
        found: dict[str, tuple[str, str, dict[str, Any]]] = {}
        for owner, path, point in self.points.all():
            found[point[SETTINGS]["id"]] = (owner, path, point)
        for (_, command, path), arguments in self.configuration.items():
            if command != "setBreakpoints":
                continue
            for given in arguments.get("breakpoints") or []:
                for settings in riding(given) if isinstance(given, dict) else []:
                    point = {"line": given.get("line"), "mode": MODE, SETTINGS: settings}
                    found.setdefault(settings["id"], ("a DAP session", path, point))
        return found

    def point_settings(self, point: str) -> dict[str, Any] | None:
        """A set point's settings (its ``job`` and ``rank`` say whose captures it takes)."""
        found = self._set().get(point)
        return dict(found[2][SETTINGS]) if found is not None else None

    def list_points(self) -> list[CapturePoint]:
        """Every point set, by any door, with what it captured so far."""
        found = self._set()
        counts = self.captures.counts()
        now = time.time()
        listed = []
        for pid, (owner, path, point) in found.items():
            settings = point[SETTINGS]
            until = float(settings.get("until") or 0)
            listed.append(
                CapturePoint(
                    id=pid,
                    path=path,
                    line=point["line"],
                    owner=owner,
                    condition=_user_condition(point, settings),
                    rank=settings.get("rank"),
                    ranks=settings.get("ranks"),
                    job=settings.get("job"),
                    interval=settings.get("interval", 0),
                    most=settings.get("most", 0),
                    budget_ms=settings.get("budget_ms", 0),
                    until=until,
                    expired=bool(until) and until <= now,
                    captures=counts.get(pid, 0),
                    disabled=self.captures.disabled.get(pid),
                )
            )
        return listed

    async def set_point(
        self,
        owner: str,
        path: str,
        line: int,
        *,
        condition: str | None = None,
        rank: int | None = None,
        ranks: str | None = None,
        job: str | None = None,
        limits: dict[str, float] | None = None,
    ) -> CapturePoint:
        """A point kept here and given to every live worker (with ``ranks``, a rank set the
        door checked: to the ranks it names)."""
        settings: dict[str, Any] = {**(limits or {})}
        if rank is not None:
            settings["rank"] = rank
        if ranks is not None:
            settings["ranks"] = ranks
        if job is not None:
            settings["job"] = job
        point = await self.points.add(owner, path, line, condition, settings)
        pid = point[SETTINGS]["id"]
        return next(p for p in self.list_points() if p.id == pid)

    async def clear_point(self, point: str) -> None:
        if await self.points.remove(point):
            self.captures.forget_point(point)
        else:
            known = point in self._set()
            raise WorkerError(
                f"capture point {point} belongs to a DAP session: clear it there"
                if known
                else f"no capture point {point}",
                Kind.FORBIDDEN if known else Kind.NOT_FOUND,
            )

    def list_captures(
        self,
        *,
        job: str | None = None,
        rank: int | None = None,
        point: str | None = None,
        kind: CaptureKind | None = None,
    ) -> list[CaptureSummary]:
        return self.captures.summaries(job=job, rank=rank, point=point, kind=kind)

    def get_capture(self, capture: str) -> Capture:
        found = self.captures.get(capture)
        if found is None:
            raise WorkerError(f"no capture {capture} (it may have been removed)", Kind.NOT_FOUND)
        return found

    def feed(self, capture: str) -> CaptureFeed:
        """A capture as a DAP session serves it (read-only), by its id or a prefix of it."""
        matches = [c for c in self.captures.matching() if c.id.startswith(capture)]
        if len(matches) != 1:
            raise AttachError(
                f"no capture {capture} (`raydap captures` lists them)"
                if not matches
                else f"{capture} names {len(matches)} captures: give more of the id",
                Kind.NOT_FOUND if not matches else Kind.INVALID,
            )
        [found] = matches
        who = f"rank {found.rank} " if found.rank is not None else ""
        where = f"pid {found.pid} on {found.node}" if found.pid else found.worker
        description = (
            f"capture point {found.point}, hit {found.hit}" if found.point else "exception"
        )
        facts = {"capture": found.id, "task": found.function, "pid": found.pid,
                 "rank": found.rank, "node": found.node}  # fmt: skip
        return CaptureFeed(
            found.id, f"{who}{found.function} ({where})", found.frames,
            exception=found.exception, description=description,
            worker={name: value for name, value in facts.items() if value is not None},
        )  # fmt: skip

    def show(self, point: str, expression: str) -> list[dict[str, Any]]:
        """One expression over a point's captures, the latest of each rank (or worker), in
        rank order: ``{"rank", "worker", "capture", "value"}`` or ``"error"``."""
        latest: dict[object, Capture] = {}
        for capture in self.captures.matching(point=point):
            rank = (capture.job, capture.rank)  # a rank is a rank of one job
            latest[rank if capture.rank is not None else capture.worker] = capture
        rows = []
        for capture in sorted(latest.values(), key=_rank_order):
            row: dict[str, Any] = {"rank": capture.rank, "worker": capture.worker,
                                   "capture": capture.id}  # fmt: skip
            try:
                row["value"] = read_path(capture, expression)
            except WorkerError as exc:
                row["error"] = str(exc)
            rows.append(row)
        return rows


def _rank_order(capture: Capture) -> tuple[int, str]:
    return (capture.rank if capture.rank is not None else 1 << 30, capture.worker)


def _user_condition(point: dict[str, Any], settings: dict[str, Any]) -> str | None:
    """The condition a person set (a worker's breakpoint holds it in the point's settings)."""
    condition = settings.get("condition", point.get("condition"))
    return condition if isinstance(condition, str) else None


def read_path(capture: Capture, expression: str, frame: int = 0) -> dict[str, Any]:
    """The captured value at ``expression`` in a frame's locals (see
    :mod:`raydap.adapter.captures.paths`)."""
    if not 0 <= frame < len(capture.frames):
        raise WorkerError(f"the capture has no frame {frame}", Kind.INVALID)
    values = capture.frames[frame].get("locals")
    if not isinstance(values, list):
        raise WorkerError("this frame's locals were not captured", Kind.NOT_FOUND)
    return capture_paths.read_path(values, expression)
