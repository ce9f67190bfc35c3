"""``/metrics`` of a real bridge holding three real paused debugpy processes."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.conftest import BridgeProcess, start_bridge, stop_bridge
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[4]
VIEWER = "viewer-secret-0123456789abcdef"


@pytest.fixture
def three_paused(tmp_path: Path) -> Iterator[BridgeProcess]:
    env = dict(os.environ, PYDEVD_DISABLE_FILE_VALIDATION="1")
    debuggee = [sys.executable, "-Xfrozen_modules=off", str(ROOT / "bench" / "debuggee.py")]
    debuggees = [subprocess.Popen(debuggee, stdout=subprocess.PIPE, text=True, env=env)
                 for _ in range(3)]  # fmt: skip
    ports = [d.stdout.readline().strip() for d in debuggees if d.stdout is not None]
    cluster = subprocess.Popen(
        [sys.executable, "-m", "bench.fake_cluster", "--workers", "0", "--real", *ports],
        stdout=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    assert cluster.stdout is not None
    url = cluster.stdout.readline().split()[1]
    tokens = tmp_path / "tokens"
    tokens.write_text(f"ops view {VIEWER}\n")
    env = {k: v for k, v in os.environ.items() if k != "RAYDAP_TOKEN"}
    bridge = start_bridge(["--dashboard-url", url, "--token-file", str(tokens)],
                          tmp_path / "bridge.log", env)  # fmt: skip
    try:
        yield bridge
    finally:
        stop_bridge(bridge)
        for process in (cluster, *debuggees):
            process.kill()
            process.wait()


def scrape(
    bridge: BridgeProcess, token: str | None
) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    request = urllib.request.Request(bridge.url + "/metrics")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.headers["Content-Type"].startswith("text/plain")
        text = answer.read().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_metrics_count_paused_workers_and_time_requests(three_paused: BridgeProcess) -> None:
    with pytest.raises(urllib.error.HTTPError) as refused:
        scrape(three_paused, None)
    assert refused.value.code == 401

    def paused_three() -> dict[tuple[str, tuple[tuple[str, str], ...]], float] | None:
        samples = scrape(three_paused, VIEWER)  # a view token may look
        return samples if samples[("raydap_workers", (("state", "paused"),))] == 3 else None

    samples = wait_until(paused_three, timeout=30, every=0.2, what="3 paused in /metrics")
    assert samples[("raydap_paused_workers", (("kind", "breakpoint"),))] == 3
    handshakes = samples[("raydap_worker_request_seconds_count",
                          (("command", "initialize"), ("outcome", "ok")))]  # fmt: skip
    assert handshakes == 3
    stack_traces = [v for (name, labels), v in samples.items()
                    if name == "raydap_worker_request_seconds_bucket"
                    and ("command", "stackTrace") in labels]  # fmt: skip
    assert stack_traces and max(stack_traces) >= 3  # a latency histogram with buckets
    assert samples[("raydap_discovery_poll_seconds_count", (("outcome", "ok"),))] >= 1
    assert samples[("raydap_auth_refusals_total", (("where", "http"),))] >= 1
    assert samples[("raydap_dap_clients", ())] == 0
