"""Capture points set outside a DAP session (HTTP, the CLI, MCP, the web page), by owner.

A DAP session's capture points are its breakpoints and live in its own book. The others are
kept here: each owner's points per file, given to every live worker held now and to each one
held later (into the worker's one owner of breakpoints, so that a session setting breakpoints
in the same file never erases them), and written to ``points.json`` in the captures directory
so that a bridge that restarts or replaces another gives them again.

A point on a rank set (its ``ranks``) is given only to the ranks the set names; a rank whose
rank or coordinates are learned later is given it then (or has it taken back), as breakpoints
on a rank set are (:mod:`raydap.bridge.workers.ranked_breakpoints`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from pathlib import Path
from typing import Any

from raydap.adapter import State, Upstream
from raydap.adapter.captures.points import MODE, SETTINGS, point_id, tag
from raydap.adapter.errors import Kind, WorkerError
from raydap.adapter.upstream.books import spec_of
from raydap.bridge.workers.filters import rank_set
from raydap.bridge.workers.holder import Holder
from raydap.bridge.workers.rank_sets import RankSetError
from raydap.bridge.workers.records import BreakpointRecord
from raydap.live import private

log = logging.getLogger(__name__)

FILE = "points.json"
#: At most this many points kept here (each costs every live worker a condition per hit).
MOST_POINTS = 100


class Points:
    def __init__(self, holder: Holder, directory: Path | None = None) -> None:
        self.holder = holder
        self.directory = directory
        #: owner -> path -> breakpoint objects (tagged: each with its settings and id).
        self._points: dict[str, dict[str, list[dict[str, Any]]]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        holder.registry.on_rank_facts.append(self._identified)

    def all(self) -> list[tuple[str, str, dict[str, Any]]]:
        """Every point kept here: (owner, path, breakpoint object)."""
        return [
            (owner, path, point)
            for owner, paths in self._points.items()
            for path, points in paths.items()
            for point in points
        ]

    def owner_of(self, point: str) -> tuple[str, str] | None:
        """(owner, path) of a point kept here, by its id."""
        for owner, path, found in self.all():
            if found[SETTINGS]["id"] == point:
                return owner, path
        return None

    async def add(
        self, owner: str, path: str, line: int, condition: str | None, settings: dict[str, Any]
    ) -> dict[str, Any]:
        """Set a point for ``owner`` (the same point again changes nothing); returns it."""
        asked: dict[str, Any] = {"line": line, "mode": MODE, SETTINGS: settings}
        if condition:
            asked["condition"] = condition
        mine = self._points.setdefault(owner, {}).setdefault(path, [])
        pid = point_id(path, {**asked, SETTINGS: settings})
        if not any(p[SETTINGS]["id"] == pid for p in mine):
            if len(self.all()) >= MOST_POINTS:
                raise WorkerError(
                    f"{MOST_POINTS} capture points are set: clear one first", Kind.INVALID
                )
            mine.extend(tag(path, [asked]))
        self.save()
        await self._give_everywhere(owner, path)
        return next(p for p in mine if p[SETTINGS]["id"] == pid)

    async def remove(self, point: str) -> bool:
        found = self.owner_of(point)
        if found is None:
            return False
        owner, path = found
        self._points[owner][path] = [
            p for p in self._points[owner][path] if p[SETTINGS]["id"] != point
        ]
        self.save()
        await self._give_everywhere(owner, path)
        return True

    def held(self, rid: str, upstream: Upstream) -> None:
        """A live worker is held: it gets every point kept here (its rank's)."""
        for owner, paths in self._points.items():
            for path in paths:
                self._spawn(self._give(upstream, rid, owner, path))

    def _identified(self, rid: str) -> None:
        """What is known of a rank changed (its coordinates, its role): the points on rank
        sets are given or taken back as they now match."""
        upstream = self.holder.upstreams.get(rid)
        if upstream is None:
            return
        for owner, path in {(o, p) for o, p, point in self.all() if _ranks(point)}:
            self._spawn(self._give(upstream, rid, owner, path))

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _give_everywhere(self, owner: str, path: str) -> None:
        chosen = [
            (r.id, u)
            for r in self.holder.registry.records()
            if r.live and (u := self.holder.upstreams.get(r.id)) is not None
        ]
        await asyncio.gather(*(self._give(u, rid, owner, path) for rid, u in chosen))

    async def _give(self, upstream: Upstream, rid: str, owner: str, path: str) -> None:
        record = self.holder.registry.get(rid)
        if upstream.state not in (State.RUNNING, State.STOPPED) or record is None:
            return
        points = self._points.get(owner, {}).get(path, [])
        specs = [spec_of(p) for p in points if _given_to(p, record)]
        given = await upstream.breakpoints.give(
            owner, ("setBreakpoints", path), specs, {"source": {"path": path}}, beside_kept=True
        )
        if given.refused:
            log.info("%s refused the capture points in %s: %s", upstream.name, path, given.refused)

    # -- kept on disk -----------------------------------------------------------------------

    def save(self) -> None:
        if self.directory is None:
            return
        try:  # a new owner-only file renamed over the old: no link is followed
            private.write_whole(self.directory / FILE, json.dumps(self._points).encode())
        except OSError as exc:
            log.warning("capture points kept in memory only: %s", exc)

    def load(self) -> int:
        """The points a previous bridge kept; returns how many."""
        if self.directory is None:
            return 0
        path = self.directory / FILE
        try:
            if path.is_symlink() or path.stat().st_uid != os.getuid():
                return 0
            loaded = json.loads(path.read_text())
        except (OSError, ValueError):
            return 0
        if not isinstance(loaded, dict):
            return 0
        for owner, paths in loaded.items():
            if not isinstance(paths, dict):
                continue
            for file, points in paths.items():
                kept = [
                    p
                    for p in points
                    if isinstance(p, dict)
                    and p.get("mode") == MODE
                    and isinstance(p.get(SETTINGS), dict)
                    and isinstance(p.get("line"), int)
                ]
                if kept:
                    self._points.setdefault(str(owner), {})[str(file)] = kept[:MOST_POINTS]
        return len(self.all())

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()


def _ranks(point: dict[str, Any]) -> str | None:
    ranks = point[SETTINGS].get("ranks")
    return ranks if isinstance(ranks, str) else None


def _given_to(point: dict[str, Any], record: BreakpointRecord) -> bool:
    """Whether a worker gets the point: every worker, or a rank its rank set names (one kept
    from a bridge whose rank sets read otherwise goes to none)."""
    ranks = _ranks(point)
    if ranks is None:
        return True
    try:
        return rank_set(ranks).matches(record.rank_facts())
    except RankSetError:
        return False
