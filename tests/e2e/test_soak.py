"""The soak at a size CI can afford (bench/soak.py; the full size is `make bench-soak`):
successive stops over live and plain actors, attached, detached and continued at random, with
the bridge replaced while they stand paused. What a person must be able to trust is checked:
no stop lost, none unreachable, every job's result right. Speed and memory figures are the
benchmark's, not asserted here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


@pytest.mark.timeout(600)
def test_successive_stops_across_replaces_lose_nothing(tmp_path: Path) -> None:
    out = tmp_path / "soak.json"
    soak = subprocess.Popen(
        [sys.executable, "-m", "bench.soak", "--smoke", "--json", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        stdout, stderr = soak.communicate(timeout=540)
    finally:
        if soak.poll() is None:  # out of time: SIGTERM lets it stop its Ray head and bridges
            soak.terminate()
            try:
                soak.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                soak.kill()
                soak.communicate()
    assert soak.returncode == 0, stdout[-2000:] + stderr[-3000:]
    figures = json.loads(out.read_text())["s1"]
    assert figures["stops"] == figures["stops_expected"] == 64, figures
    assert figures["lost"] == 0 and figures["unreachable"] == 0, figures
    assert figures["jobs_right"], figures["results"]
    assert len(figures["replaces"]) >= 2, figures["replaces"]
    assert all(count > 0 for count in figures["ways"].values()), figures["ways"]
