"""The bridge's captures: named from the worker's record (never from its own claims), kept only
for a point that is set and is that worker's, bounded in all and per point with the oldest going
first, kept on disk owner-only and read back, and never reading what is not theirs. A worker is
untrusted data: what it sends past a bound is refused and counted, and harms nothing else."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import time
from pathlib import Path
from typing import Any

from raydap.bridge.captures import intake
from raydap.bridge.captures.store import CaptureKind, Captures, CaptureSummary
from raydap.bridge.workers.records import BreakpointRecord
from raydap.bridge.workers.registry import Registry

A, B, BIG = "cp-00000000aa", "cp-00000000bb", "cp-0000000b19"
#: The points set, and whose captures each takes.
POINTS: dict[str, dict[str, Any]] = {A: {}, B: {}, BIG: {}, "cp-000000000a": {"job": "0a000000"}}


def registry_with(rank: int | None = 2, job: str | None = "02000000") -> Registry:
    registry = Registry()
    registry.put(BreakpointRecord(id="w1", node_ip="10.0.0.3", pid=81, paused_since=0.0,
                                  job_id=job, rank=rank, live=True))  # fmt: skip
    return registry


def store(registry: Registry, directory: Path | None = None, **bounds: Any) -> Captures:
    captures = Captures(registry, directory, **bounds)
    captures.point_of = POINTS.get
    return captures


def event(point: str | None = A, size: int = 10, **extra: Any) -> dict[str, Any]:
    frame = {"function": "train", "path": "/job/train.py", "line": 12,
             "locals": [{"name": "x", "type": "str", "value": "y" * size}]}  # fmt: skip
    return {"point": point, "hit": 3, "time": time.time(), "frames": [frame], "cut": False,
            **extra}  # fmt: skip


async def test_a_capture_is_named_by_its_workers_record_never_by_its_own_claims() -> None:
    registry = registry_with(rank=None, job=None)
    captures = store(registry)

    captures.told("w1", event(job="03000000", rank=5))  # waits: the record does not know yet
    captures.told("w1", event(point=None, exception="ValueError: bad"))
    await asyncio.sleep(0.2)
    record = registry.get("w1")
    assert record is not None and captures.summaries() == []
    registry.put(record.model_copy(update={"job_id": "02000000", "rank": 1}))
    await asyncio.sleep(0.3)

    point, failure = captures.summaries()
    assert (point.kind, point.job, point.rank, point.node, point.pid) == (
        CaptureKind.POINT, "02000000", 1, "10.0.0.3", 81
    )  # fmt: skip
    assert (point.path, point.line, point.function, point.hit) == ("/job/train.py", 12, "train", 3)
    assert (failure.kind, failure.exception) == (CaptureKind.EXCEPTION, "ValueError: bad")
    assert captures.get(point.id) is not None and captures.get(point.id).frames  # type: ignore[union-attr]
    assert [c.id for c in captures.summaries(kind=CaptureKind.EXCEPTION)] == [failure.id]


async def test_a_worker_let_go_right_after_its_capture_is_named_by_its_last_record() -> None:
    """A post-mortem stop is captured, then let go: its record leaves the registry while the
    capture is on its way. A worker with no rank (a plain task) is not waited for."""
    registry = registry_with(rank=None, job="05000000")
    captures = store(registry)
    captures.told("w1", event(point=None, exception="ValueError: bad"))  # no rank: kept now
    assert [c.job for c in captures.summaries()] == ["05000000"]

    unnamed = registry_with(rank=None, job=None)
    later = store(unnamed, wait_for_record=1.0)
    later.told("w1", event(point=None, exception="KeyError: k", rank=3))  # waits for a rank
    record = unnamed.get("w1")
    assert record is not None
    unnamed.put(record.model_copy(update={"job_id": "06000000"}))
    await asyncio.sleep(0.2)
    unnamed.remove("w1")  # let go: gone from the registry
    await asyncio.sleep(1.2)
    [kept] = later.summaries()
    assert (kept.job, kept.rank, kept.node) == ("06000000", None, "10.0.0.3")


def test_what_does_not_read_as_a_capture_is_refused_and_a_turned_off_point_is_said() -> None:
    captures = store(registry_with())
    told: list[tuple[CaptureSummary | None, str | None]] = []
    captures.listeners.append(lambda summary, point: told.append((summary, point)))

    junk = (None, "x", {}, {"frames": "no"}, {"frames": [1]}, event(time="soon"))
    for body in junk:
        captures.told("w1", body)
    captures.told("w1", {"point": B, "time": 1.0, "disabled": "a capture took 90 ms of CPU"})

    assert captures.summaries() == [] and captures.disabled == {B: "a capture took 90 ms of CPU"}
    assert told == [(None, B)]
    assert captures.refused == len(junk)


def test_a_worker_writes_into_no_other_jobs_point_nor_into_a_point_not_set() -> None:
    """Found on main: a worker of job 0b replaced rank 0's value at a point set for job 0a, and
    named any point id it liked."""
    captures = store(registry_with(job="0b000000", rank=0))
    captures.told("w1", event(point="cp-000000000a", job="0a000000"))  # claims the right job
    captures.told("w1", event(point="cp-00000000ff"))  # set by nobody
    captures.told("w1", {"point": "cp-000000000a", "time": 1.0, "disabled": "off, says 0b"})
    assert captures.summaries() == [] and captures.disabled == {}
    assert captures.refused == 3


def test_a_worker_cannot_make_the_bridge_allocate_past_the_bounds() -> None:
    """Each of these was sent by a hostile worker on main, and kept (or broke the reader)."""
    captures = store(registry_with())
    deep: dict[str, Any] = {"name": "x", "type": "list", "value": "list of 1"}
    for _ in range(120):  # about 100 levels raised PydanticSerializationError in the reader
        deep = {"name": "x", "type": "list", "value": "list of 1", "children": [deep]}

    def frame(**fields: Any) -> dict[str, Any]:
        return {"function": "f", "path": "p", "line": 1, **fields}

    hostile = [
        event(frames=[frame(source={"first": 50_000_000, "lines": ["x"]})]),
        event(frames=[frame(locals=[deep])]),
        event(frames=[frame(function="f" * 5000)]),
        event(frames=[frame(locals=[{"name": "k" * 5000, "type": "str", "value": "v"}])]),
        event(point="cp-" + "a" * 100_000),
        event(frames=[frame()] * 1000),
        event(hit=-1),
    ]
    for body in hostile:
        captures.told("w1", body)
    assert captures.summaries() == [] and captures.refused == len(hostile)
    captures.told("w1", event())  # the worker's next good capture is kept as ever
    assert len(captures.summaries()) == 1


def test_the_reasons_a_worker_gives_are_bounded_and_cleared_with_their_point() -> None:
    captures = store(registry_with())
    captures.told("w1", {"point": A, "time": 1.0, "disabled": "x" * 10_000_000})
    assert len(captures.disabled[A]) == intake.MAX_REASON
    captures.forget_point(A)
    assert captures.disabled == {}


def test_a_points_room_is_forgotten_with_its_last_capture() -> None:
    captures = store(registry_with(), most=2)
    for point in (A, B, BIG):
        captures.told("w1", event(point=point))
    assert set(captures._point_bytes) == {B, BIG}  # A's capture went, and its count with it
    assert json.dumps(captures._point_bytes)


def test_the_oldest_go_first_and_a_full_point_drops_its_new_captures() -> None:
    captures = store(registry_with(), most=3, point_bytes=3000)

    for _ in range(4):
        captures.told("w1", event(point=A))
    assert len(captures.summaries()) == 3  # the first went

    for _ in range(4):
        captures.told("w1", event(point=BIG, size=1200))
    big = captures.summaries(point=BIG)
    assert 1 <= len(big) < 4 and len(big) + captures.dropped == 4  # its own bound
    assert len(captures.summaries(point=A)) == 3 - len(big)  # "most" counts them all


def test_captures_are_kept_owner_only_and_read_back(tmp_path: Path) -> None:
    first = store(registry_with(), tmp_path)
    first.told("w1", event())
    first.told("w1", event(point=None, exception="KeyError: 'k'"))

    files = sorted(tmp_path.iterdir())
    assert len(files) == 2 and all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in files)
    again = Captures(Registry(), tmp_path)  # a new bridge: the worker is long gone
    assert again.load() == 2
    assert [c.id for c in again.summaries()] == [c.id for c in first.summaries()]
    assert again.summaries()[0].job == "02000000"


def test_a_write_a_killed_bridge_left_half_done_is_not_read_and_is_cleaned_up(
    tmp_path: Path,
) -> None:
    store(registry_with(), tmp_path).told("w1", event())
    (tmp_path / ".cap-222222222222.json.part").write_text('{"id": "cap-2222')  # cut short
    (tmp_path / ".notes.json.part").write_text("not ours")

    again = Captures(Registry(), tmp_path)
    assert again.load() == 1
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left[0] == ".notes.json.part" and len(left) == 2 and left[1].startswith("cap-")


def test_only_files_it_wrote_are_read_back_or_removed(tmp_path: Path) -> None:
    mine = store(registry_with(), tmp_path, most=1)
    mine.told("w1", event())
    (tmp_path / "notes.json").write_text("{}")
    (tmp_path / "cap-000000000000.json").write_text("not json")
    os.symlink("/etc/passwd", tmp_path / "cap-111111111111.json")

    again = store(Registry(), tmp_path, most=1)
    assert again.load() == 1
    again.told("w1", event())  # over "most": the oldest goes, and only its file

    left = {p.name for p in tmp_path.iterdir()}
    assert {"notes.json", "cap-000000000000.json", "cap-111111111111.json"} <= left
    assert len([n for n in left if n.startswith("cap-")]) == 3
