"""The soak at a size CI can afford (bench/soak.py; the full size is `make bench-soak`):
successive stops over live and plain actors, attached, detached and continued at random, with
the bridge replaced while they stand paused. What a person must be able to trust is checked:
no stop lost, none unreachable, every job's result right. Speed and memory figures are the
benchmark's, not asserted here."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import run_benchmark_smoke

pytestmark = pytest.mark.e2e


@pytest.mark.timeout(600)
def test_successive_stops_across_replaces_lose_nothing(tmp_path: Path) -> None:
    figures = run_benchmark_smoke("bench.soak", tmp_path / "soak.json")[0]["s1"]
    assert figures["stops"] == figures["stops_expected"] == 32, figures
    assert figures["lost"] == 0 and figures["unreachable"] == 0, figures
    assert figures["jobs_right"], figures["results"]
    assert len(figures["replaces"]) >= 2, figures["replaces"]  # each with workers paused
    assert all(count > 0 for count in figures["ways"].values()), figures["ways"]
