"""What the doors ask of the hang watch: each watched job's verdict, one more job watched, a
job's latest report and its collectives as a grid. ``unavailable`` while the watch is off."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from raydap.adapter.errors import Kind, WorkerError
from raydap.bridge.hangs.grid import Grid
from raydap.bridge.hangs.reports import HangReports
from raydap.bridge.hangs.verdicts import Verdict
from raydap.bridge.hangs.watch import HangWatch


@dataclass(frozen=True)
class HangList:
    """Each watched job's verdict, and how the watch is set, as every door lists them."""

    jobs: list[Verdict]
    #: Seconds of standing stacks after which a job is suspected hung.
    hang_after: float
    #: Which jobs are watched: ``live`` (jobs with live workers), ``all``, or those asked.
    watching: str
    #: Why the last look at the cluster failed, if it did.
    error: str | None

    def answer(self) -> dict[str, Any]:
        return {
            "jobs": [v.model_dump(mode="json") for v in self.jobs],
            "hang_after": self.hang_after,
            "watching": self.watching,
            "error": self.error,
        }


@dataclass(frozen=True)
class HangReport:
    """A hang report on this bridge's machine: its folder, its verdict read back, and all of it
    as one ``.tar.gz`` (for a person on another machine). Both read files: call off the loop."""

    folder: Path
    reports: HangReports

    def verdict(self) -> dict[str, Any]:
        return self.reports.verdict(self.folder)

    def archive(self) -> bytes:
        return self.reports.archive(self.folder)


@dataclass(frozen=True)
class HangService:
    #: The bridge's hang watch (None: off).
    watcher: HangWatch | None

    @property
    def on(self) -> bool:
        return self.watcher is not None

    def watch(self) -> HangWatch:
        if self.watcher is None:
            raise WorkerError(
                "the bridge's hang watch is off (raydap serve --hang-watch)", Kind.UNAVAILABLE
            )
        return self.watcher

    def verdicts(self, job: str | None = None) -> HangList:
        """Each watched job's verdict, or ``job``'s."""
        watch = self.watch()
        verdicts = [v for v in watch.verdicts() if job is None or v.job == job]
        return HangList(verdicts, watch.judge.hang_after, watch.scope, watch.last_error)

    def watch_job(self, job: str) -> None:
        """Watch one more job for hangs (any job, live workers or not); ``refused`` past the
        watch's bound on jobs asked for."""
        try:
            self.watch().watch(job)
        except ValueError as exc:
            raise WorkerError(str(exc), Kind.REFUSED) from None

    def report(self, job: str) -> HangReport:
        """The latest hang report of ``job`` on this bridge's machine."""
        reports = self.watch().reports
        found = reports.latest(job) if reports is not None else None
        if reports is None or found is None:
            raise WorkerError(f"no hang report of job {job!r} on this bridge", Kind.NOT_FOUND)
        return HangReport(found, reports)

    def grid(self, job: str) -> Grid:
        """``job``'s collectives as a grid, while it is a suspected hang its recorders explain
        (``not_found`` otherwise)."""
        grid = self.watch().grid(job)
        if grid is None:
            raise WorkerError(
                f"job {job!r} is not a suspected hang whose collectives disagree", Kind.NOT_FOUND
            )
        return grid
