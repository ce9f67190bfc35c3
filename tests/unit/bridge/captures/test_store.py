"""The bridge's captures: named from the worker's record, bounded in all and per point with the
oldest going first, kept on disk owner-only and read back, and never reading what is not
theirs."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path
from typing import Any

from raydap.bridge.captures.store import CaptureKind, Captures, CaptureSummary
from raydap.bridge.workers.records import BreakpointRecord
from raydap.bridge.workers.registry import Registry


def registry_with(rank: int | None = 2, job: str | None = "02000000") -> Registry:
    registry = Registry()
    registry.put(BreakpointRecord(id="w1", node_ip="10.0.0.3", pid=81, paused_since=0.0,
                                  job_id=job, rank=rank, live=True))  # fmt: skip
    return registry


def event(point: str | None = "cp-a", size: int = 10, **extra: Any) -> dict[str, Any]:
    frame = {"function": "train", "path": "/job/train.py", "line": 12,
             "locals": [{"name": "x", "type": "str", "value": "y" * size}]}  # fmt: skip
    return {"point": point, "hit": 3, "time": time.time(), "frames": [frame], "cut": False,
            **extra}  # fmt: skip


def test_a_capture_is_named_by_its_workers_record_and_the_worker_fills_the_gaps() -> None:
    captures = Captures(registry_with(rank=None, job=None))

    captures.told("w1", event(job="03000000", rank=5))
    captures.told("w1", event(point=None, exception="ValueError: bad"))

    point, failure = captures.summaries()
    assert (point.kind, point.job, point.rank, point.node, point.pid) == (
        CaptureKind.POINT, "03000000", 5, "10.0.0.3", 81
    )  # fmt: skip
    assert (point.path, point.line, point.function, point.hit) == ("/job/train.py", 12, "train", 3)
    assert (failure.kind, failure.exception) == (CaptureKind.EXCEPTION, "ValueError: bad")
    assert captures.get(point.id) is not None and captures.get(point.id).frames  # type: ignore[union-attr]
    assert [c.id for c in captures.summaries(kind=CaptureKind.EXCEPTION)] == [failure.id]


def test_what_does_not_read_as_a_capture_is_dropped_and_a_turned_off_point_is_said() -> None:
    captures = Captures(registry_with())
    told: list[tuple[CaptureSummary | None, str | None]] = []
    captures.listeners.append(lambda summary, point: told.append((summary, point)))

    for junk in (None, "x", {}, {"frames": "no"}, {"frames": [1]}, event(time="soon")):
        captures.told("w1", junk)
    captures.told("w1", {"point": "cp-b", "disabled": "a capture took 90 ms of CPU"})

    assert captures.summaries() == [] and captures.disabled == {
        "cp-b": "a capture took 90 ms of CPU"
    }
    assert told == [(None, "cp-b")]


def test_the_oldest_go_first_and_a_full_point_drops_its_new_captures() -> None:
    captures = Captures(registry_with(), most=3, point_bytes=3000)

    for _ in range(4):
        captures.told("w1", event(point="cp-a"))
    assert len(captures.summaries()) == 3  # the first went

    for _ in range(4):
        captures.told("w1", event(point="cp-big", size=1200))
    big = captures.summaries(point="cp-big")
    assert 1 <= len(big) < 4 and len(big) + captures.dropped == 4  # its own bound
    assert len(captures.summaries(point="cp-a")) == 3 - len(big)  # "most" counts them all


def test_captures_are_kept_owner_only_and_read_back(tmp_path: Path) -> None:
    first = Captures(registry_with(), tmp_path)
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
    Captures(registry_with(), tmp_path).told("w1", event())
    (tmp_path / ".cap-222222222222.json.part").write_text('{"id": "cap-2222')  # cut short
    (tmp_path / ".notes.json.part").write_text("not ours")

    again = Captures(Registry(), tmp_path)
    assert again.load() == 1
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left[0] == ".notes.json.part" and len(left) == 2 and left[1].startswith("cap-")


def test_only_files_it_wrote_are_read_back_or_removed(tmp_path: Path) -> None:
    mine = Captures(registry_with(), tmp_path, most=1)
    mine.told("w1", event())
    (tmp_path / "notes.json").write_text("{}")
    (tmp_path / "cap-000000000000.json").write_text("not json")
    os.symlink("/etc/passwd", tmp_path / "cap-111111111111.json")

    again = Captures(Registry(), tmp_path, most=1)
    assert again.load() == 1
    again.told("w1", event())  # over "most": the oldest goes, and only its file

    left = {p.name for p in tmp_path.iterdir()}
    assert {"notes.json", "cap-000000000000.json", "cap-111111111111.json"} <= left
    assert len([n for n in left if n.startswith("cap-")]) == 3
