"""Hang reports on disk: what they hold, that torch's own analyzer reads them, their bounds, and
that nothing in the directory the bridge did not write is trusted."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from raydap.bridge.hangs.desync import RankDump, judge
from raydap.bridge.hangs.reports import HangReports
from tests.unit.bridge.hangs.test_desync import recorded


def write(reports: HangReports, job: str = "01000000") -> Path:
    dumps = recorded("skip")
    verdict = {"job": job, "collective": judge(dumps)[0].model_dump(mode="json")}
    return reports.write(job, verdict, {"tree": {"children": []}}, dumps, dumps[0].identity.world)


def test_a_report_holds_the_verdict_the_stacks_and_a_dump_per_rank(tmp_path: Path) -> None:
    reports = HangReports(tmp_path / "hangs")
    folder = write(reports)
    assert {p.name for p in folder.iterdir()} == {
        "verdict.json", "stacks.json", "rank_0", "rank_1", "rank_2", "rank_3",
    }  # fmt: skip
    assert oct((tmp_path / "hangs").stat().st_mode & 0o777) == "0o700"
    assert {oct(p.stat().st_mode & 0o777) for p in folder.iterdir()} == {"0o600"}
    assert reports.verdict(folder)["report"] == str(folder)
    assert reports.latest("01000000") == folder and reports.latest("02000000") is None
    dump = pickle.loads((folder / "rank_2").read_bytes())  # written by the bridge, not a worker
    # the groups torch's analyzer evals come from validated ints, keyed as entries name them
    assert dump["pg_config"] == {
        "0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2, 3]"},
    }
    assert dump["entries"][-1]["process_group"] == ("0", "default_pg")


def analyzed(folder: Path) -> str:
    """What torch's own Flight Recorder analyzer says of a report (it must read it)."""
    pytest.importorskip("torch", reason="torch==2.13.0 is in the test extras on Python 3.11")
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.flight_recorder.fr_trace", str(folder)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout + done.stderr  # it reports through logging


def test_torchs_analyzer_reads_a_report_and_agrees(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="torch==2.13.0 is in the test extras on Python 3.11")
    said = analyzed(write(HangReports(tmp_path)))
    assert "Not all ranks joining collective, sequence number: 10" in said
    assert "missing ranks: {2}" in said


def test_ranks_of_other_worlds_go_apart_so_the_first_world_still_reads(tmp_path: Path) -> None:
    dumps = recorded("skip")
    other = [
        RankDump(d.worker + "b", d.identity.model_copy(update={"world": "b:1"}), d.recorder)
        for d in dumps[:2]
    ]
    world = dumps[0].identity.world
    folder = HangReports(tmp_path).write("01", {"job": "01"}, None, [*dumps, *other], world)
    assert sorted(p.name for p in folder.glob("rank_*")) == ["rank_0", "rank_1", "rank_2", "rank_3"]
    assert sorted(p.name for p in (folder / "other-worlds" / "1").iterdir()) == ["rank-0", "rank-1"]
    assert json.loads((folder / "other-worlds" / "worlds.json").read_text()) == {"1": "b:1"}


def test_reports_are_bounded_oldest_first(tmp_path: Path) -> None:
    reports = HangReports(tmp_path, max_reports=2)
    first, second, third = (write(reports, job) for job in ("01", "02", "03"))
    assert not first.exists() and second.exists() and third.exists()
    tiny = HangReports(tmp_path, max_bytes=1)
    kept = write(tiny, "04")  # a bound below one report: the newest stays, the verdict names it
    assert kept.exists() and not second.exists() and not third.exists()


def test_what_the_bridge_did_not_write_is_never_read_served_or_removed(tmp_path: Path) -> None:
    reports = HangReports(tmp_path, max_reports=1)
    planted = tmp_path / "01000000-20991231T235959Z-abcdef"  # newest by name, not ours
    planted.mkdir()
    (planted / "verdict.json").symlink_to("/etc/hostname")
    secret = tmp_path / "secret"
    secret.write_text("not for the archive")
    folder = write(reports)
    assert reports.latest("01000000") == folder  # the planted one has no real marker
    assert planted.exists()  # and pruning leaves it alone
    (folder / "link").symlink_to(secret)
    with tarfile.open(fileobj=__import__("io").BytesIO(reports.archive(folder))) as tar:
        names = {Path(n).name for n in tar.getnames()}
    assert "link" not in names and "verdict.json" in names
    os.symlink(tmp_path, tmp_path.parent / "hangs-link")
    with pytest.raises(PermissionError):
        HangReports(tmp_path.parent / "hangs-link").write("01", {}, None, [], None)
