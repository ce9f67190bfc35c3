"""The benchmark harness runs end to end (briefly). Its figures are not checked here: speed is
measured by `make bench` and recorded in docs/performance.md, not asserted by tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import run_benchmark_smoke

pytestmark = pytest.mark.e2e


@pytest.mark.timeout(600)  # every stage, several of them on a real Ray head
def test_benchmark_harness_smoke(tmp_path: Path) -> None:
    figures, stdout = run_benchmark_smoke("bench.run", tmp_path / "bench.json")
    for stage in ("p1", "p1b"):  # a pause debugpy left unreachable ends the stage early
        p1 = figures[stage]
        assert p1["n"] == 2 or (p1["unreachable_pauses"] == 1 and p1["n"] < 2)
    for side in ("direct", "bridge_tcp", "bridge_ws"):
        assert {"attach", "read_only", "uncached"} <= figures["p2_p3"][side].keys()
    assert figures["p4"]["continued"] == figures["p4"]["workers"] == 20
    assert figures["p4"]["threads_listed"] == 20
    assert "| P3 read-only request" in stdout
    if "skipped" not in figures["p6"]:  # it says why when this machine forbids ptrace
        assert figures["p6"]["ranks"] == 4
        pause = figures["p6"]["pause"]  # or why raydap refuses it here (gdb_refusal)
        assert pause.get("n") == 1 or "gdb cannot call into a process" in pause["skipped"]
    assert figures["p6b"]["ranks"] == 20 and figures["p6b"]["failed"] == 0
    assert figures["p7_scale"]["paused"] == figures["p7_scale"]["workers"] == 20
    assert (
        figures["p7_stops"]["listed"]["n"] == 2 and figures["p7_stops"]["gutter_stopped"]["n"] == 3
    )
    assert {"live_ratio", "live_breakpoint_elsewhere_ratio"} <= figures["p7"]["python_calls"].keys()


def test_rank_sets_benchmark_matches_what_its_mesh_holds(tmp_path: Path) -> None:
    figures, _ = run_benchmark_smoke("bench.rank_sets", tmp_path / "rank_sets.json", timeout=120)
    matched = {text: found["matched"] for text, found in figures["s1"].items() if text != "ranks"}
    # 10,000 ranks on a 10 x 25 x 40 (pp, dp, tp) mesh, odd ranks actors
    assert matched == {"0-4999,9000-9999": 6000, "pp=1 tp=0:4 dp=(1,3)": 8,
                       "group=mesh_tp:5": 40, "actor pp=3": 500}  # fmt: skip
    assert figures["s2"]["ranks"] == 1000
