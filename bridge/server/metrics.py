"""``GET /metrics``: the bridge in Prometheus' text format (prometheus-client).

Counts and latencies are recorded as things happen (one dict update each, nothing a worker
notices); the gauges of what is held are read from the registry at scrape time, so a scrape
sends nothing to any worker.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, get_args

from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client import Counter as CounterMetric
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from raydap.bridge.captures.store import Captures
from raydap.bridge.hangs.verdicts import JobState
from raydap.bridge.hangs.watch import HangWatch
from raydap.bridge.workers.records import RecordState
from raydap.bridge.workers.registry import Registry

#: Requests to workers take about 44 ms each through debugpy; cached answers never get here.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class _HeldWorkers(Collector):
    """Gauges read at scrape time from what the bridge holds."""

    def __init__(self, registry: Registry, clients: Callable[[], int]) -> None:
        self._registry = registry
        self._clients = clients

    def collect(self) -> Iterator[GaugeMetricFamily]:
        records = self._registry.records()
        states = Counter(r.state for r in records)
        by_state = GaugeMetricFamily(
            "raydap_workers", "Workers the bridge lists, by state", labels=["state"]
        )
        for state in RecordState:
            by_state.add_metric([state.value], states.get(state, 0))
        yield by_state
        kinds = Counter(
            r.kind for r in records if r.state == RecordState.PAUSED or r.kind == "legacy-pdb"
        )
        paused = GaugeMetricFamily(
            "raydap_paused_workers", "Paused workers, by kind of pause", labels=["kind"]
        )
        for kind in ("breakpoint", "exception", "legacy-pdb"):
            paused.add_metric([kind], kinds.get(kind, 0))
        yield paused
        yield GaugeMetricFamily(
            "raydap_dap_clients", "DAP client sessions connected", value=self._clients()
        )


class _Hangs(Collector):
    """Watched jobs by verdict, read at scrape time."""

    def __init__(self) -> None:
        self.watch: HangWatch | None = None

    def collect(self) -> Iterator[GaugeMetricFamily]:
        verdicts = self.watch.verdicts() if self.watch is not None else []
        states = Counter(v.state for v in verdicts)
        jobs = GaugeMetricFamily(
            "raydap_watched_jobs", "Jobs the hang watch samples, by verdict", labels=["state"]
        )
        for state in get_args(JobState):
            jobs.add_metric([state], states.get(state, 0))
        yield jobs
        hung = GaugeMetricFamily(
            "raydap_job_suspected_hang", "1 while a job is a suspected hang", labels=["job"]
        )
        stuck = GaugeMetricFamily(
            "raydap_collective_stuck_seq",
            "The collective sequence number at which a hung job's ranks disagree, by group",
            labels=["job", "group", "op"],
        )
        for verdict in verdicts:
            if verdict.state == "suspected_hang":
                hung.add_metric([verdict.job], 1)
                if (found := verdict.collective) is not None:
                    stuck.add_metric([verdict.job, found.group, found.op], found.seq)
        yield hung
        yield stuck
        read = GaugeMetricFamily(
            "raydap_collective_read_seconds",
            "How long the latest read of a hung job's Flight Recorders took, by phase "
            "(entries: every rank's; frames: the blamed ranks' call sites)",
            labels=["job", "phase"],
        )
        for job, (entries, frames) in (self.watch.read_seconds() if self.watch else {}).items():
            read.add_metric([job, "entries"], entries)
            read.add_metric([job, "frames"], frames)
        yield read


class _Captures(Collector):
    """Captures kept, taken and dropped, and capture points turned off, read at scrape time."""

    def __init__(self) -> None:
        self.captures: Captures | None = None

    def collect(self) -> Iterator[Any]:
        found = self.captures
        if found is None:
            return
        yield CounterMetricFamily(
            "raydap_captures", "Captures the bridge took in (capture points and post-mortem "
            "stops)", value=found.taken,
        )  # fmt: skip
        yield CounterMetricFamily(
            "raydap_captures_dropped", "Captures dropped: too large, or their point's room "
            "was full", value=found.dropped,
        )  # fmt: skip
        yield CounterMetricFamily(
            "raydap_captures_refused", "Capture events a worker sent that were refused: past a "
            "bound, or for a point not set or not that worker's", value=found.refused,
        )  # fmt: skip
        yield GaugeMetricFamily("raydap_captures_kept", "Captures kept now", value=len(found))
        yield GaugeMetricFamily(
            "raydap_capture_points_disabled", "Capture points a worker turned off (over their "
            "time budget)", value=len(found.disabled),
        )  # fmt: skip


class Metrics:
    def __init__(self, registry: Registry, clients: Callable[[], int]) -> None:
        self.registry = CollectorRegistry()
        self.registry.register(_HeldWorkers(registry, clients))
        self._hangs = _Hangs()
        self.registry.register(self._hangs)
        self._captures = _Captures()
        self.registry.register(self._captures)
        self._requests = Histogram(
            "raydap_worker_request_seconds", "Requests sent to workers' debugpy, by command",
            ["command", "outcome"], buckets=LATENCY_BUCKETS, registry=self.registry,
        )  # fmt: skip
        self._polls = Histogram(
            "raydap_discovery_poll_seconds", "Discovery polls of the dashboard",
            ["outcome"], buckets=LATENCY_BUCKETS, registry=self.registry,
        )  # fmt: skip
        self._refusals = CounterMetric(
            "raydap_auth_refusals", "Requests refused for their credentials or origin",
            ["where"], registry=self.registry,
        )  # fmt: skip
        self._tool_calls = Histogram(
            "raydap_mcp_call_seconds", "Coding agents' MCP tool calls, by tool and outcome",
            ["tool", "outcome"], buckets=LATENCY_BUCKETS, registry=self.registry,
        )  # fmt: skip

    def watch_hangs(self, watch: HangWatch | None) -> None:
        self._hangs.watch = watch

    def count_captures(self, captures: Captures) -> None:
        self._captures.captures = captures

    def worker_request(self, command: str, seconds: float, ok: bool) -> None:
        self._requests.labels(command, "ok" if ok else "error").observe(seconds)

    def discovery_poll(self, seconds: float, ok: bool) -> None:
        self._polls.labels("ok" if ok else "error").observe(seconds)

    def tool_call(self, tool: str, seconds: float, outcome: str) -> None:
        """``outcome``: ok, error (the tool said why) or refused (the token may only look)."""
        self._tool_calls.labels(tool, outcome).observe(seconds)

    def refused(self, where: str) -> None:
        self._refusals.labels(where).inc()

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
