"""The figures the docs quote are the benchmarks' own: each number of docs/performance.md's
table of results is the one in bench/results.json, and a page that quotes a P figure
quotes a number of that figure's rows (docs/clients.md once said 0.15 ms for a 0.30 ms)."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PERFORMANCE = ROOT / "docs" / "performance.md"
PAGES = [
    ROOT / "README.md",
    ROOT / "vscode-ext" / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
]

#: The table's rows (their first cell), and what each number of the result cell is: a path in
#: bench/results.json, or two paths' difference (``a - b``) or ratio (``a / b``), in the order
#: the cell shows them (a count the first cell shows, 16 or 1,000, first).
TABLE = {
    "P1 discovery, `breakpoint()` → listed by the bridge, p50": ["p1.p50_ms"],
    "P1 discovery p95": ["p1.p95_ms"],
    "P1b next stop of a worker the bridge still holds, p50 (p95)": ["p1b.p50_ms", "p1b.p95_ms"],
    "P2 attach to a held worker, connect → `stopped` → first `stackTrace` (TCP)":
        ["p2_p3.bridge_tcp.attach.p50_ms"],
    "P2 the same, attaching to debugpy directly": ["p2_p3.direct.attach.p50_ms"],
    "P2 over WebSocket": ["p2_p3.bridge_ws.attach.p50_ms"],
    "P2 through `raydap dap` (starting its process included)": ["p2_p3.bridge_stdio.attach.p50_ms"],
    "P3 read-only request on a stopped thread (TCP)": ["p2_p3.bridge_tcp.read_only.p50_ms"],
    "P3 the same, debugpy directly": ["p2_p3.direct.read_only.p50_ms"],
    "P3 over WebSocket": ["p2_p3.bridge_ws.read_only.p50_ms"],
    "P3 through `raydap dap`: added to TCP": [
        "p2_p3.bridge_stdio.read_only.p50_ms - p2_p3.bridge_tcp.read_only.p50_ms",
        "p2_p3.bridge_stdio.read_only.p50_ms",
    ],
    "P3b uncached request (`evaluate`), bridge / direct (TCP)": [
        "p3b_ratio", "p2_p3.bridge_tcp.uncached.p50_ms", "p2_p3.direct.uncached.p50_ms",
    ],
    "P3b over WebSocket / direct":
        ["p2_p3.bridge_ws.uncached.p50_ms / p2_p3.direct.uncached.p50_ms"],
    "P4 1,000 paused workers discovered and held": ["p4.workers", "p4.hold_s"],
    "P4 a follow session shows all 1,000 stopped": ["p4.workers", "p4.follow_all_stopped_s"],
    "P4 `threads` of that session (1,000 threads)": ["p4.workers", "p4.follow_threads_s"],
    "P4 group continue of 1,000 workers": ["p4.workers", "p4.group_continue_s"],
    "P4 bridge peak RSS": ["p4.peak_rss_mb"],
    "P5 idle bridge RSS": ["p5.rss_mb"],
    "P5 idle bridge CPU": ["p5.cpu_percent"],
    "P6 merged stacks of 16 real running ranks, first answer (joins Ray, starts a node task)":
        ["p6.ranks", "p6.first_s"],
    "P6 merged stacks of 16 real running ranks, p50 (p95)":
        ["p6.ranks", "p6.warm.p50_ms", "p6.warm.p95_ms"],
    "P6 outside pause of a running rank → listed as paused": ["p6.pause.p50_ms"],
    "P6 merged stacks of 1,000 simulated ranks, p50 (p95)":
        ["p6b.ranks", "p6b.merged.p50_ms", "p6b.merged.p95_ms"],
    "P6 bridge RSS: after 1,000 simulated stacks / as a Ray driver with 16 real ones":
        ["p6b.ranks", "p6.ranks", "p6b.peak_rss_mb", "p6.peak_rss_mb"],
    "P7 live worker, bridge attached, no breakpoint: CPU-bound Python calls, live / plain":
        ["p7.python_calls.live_ratio"],
    "P7 the same, numpy (compiled code)": ["p7.numpy.live_ratio"],
    "P7 a breakpoint set in another file: Python calls, live / plain":
        ["p7.python_calls.live_breakpoint_elsewhere_ratio"],
    "P7 a breakpoint set in another file: numpy": ["p7.numpy.live_breakpoint_elsewhere_ratio"],
    "P7 `breakpoint()` in a live worker → listed, p50 (first of a fresh worker)":
        ["p7_stops.listed.p50_ms", "p7_stops.listed.first_ms"],
    "P7 a line with a client's breakpoint runs → that client's `stopped`, p50 (p95)":
        ["p7_stops.gutter_stopped.p50_ms", "p7_stops.gutter_stopped.p95_ms"],
    "P7 1,000 simulated live workers held / joined a follow session":
        ["p7_scale.workers", "p7_scale.hold_s", "p7_scale.follow_joined_s"],
    "P7 one `setBreakpoints` reaches all 1,000 live workers":
        ["p7_scale.workers", "p7_scale.set_breakpoints_all_s"],
    "P7 pause all 1,000 (`POST /api/v1/pause`)": ["p7_scale.workers", "p7_scale.pause_all_s"],
    "P7 bridge peak RSS with 1,000 live workers": ["p7_scale.workers", "p7_scale.peak_rss_mb"],
}  # fmt: skip

#: A number as the docs write it, and its unit.
NUMBER = re.compile(r"(?<![\w.])(\d[\d,]*(?:\.\d+)?)(?:\s*(ms|s|MB|%))?(?![\w.])")


@cache
def results() -> dict[str, Any]:
    return dict(json.loads((ROOT / "bench" / "results.json").read_text()))


def value(expression: str) -> float:
    def one(path: str) -> float:
        found: Any = results()
        for key in path.strip().split("."):
            found = found[key]
        return float(found)

    if " / " in expression:
        over, _, under = expression.partition(" / ")
        return one(over) / one(under)
    first, _, second = expression.partition(" - ")
    return one(first) - (one(second) if second else 0.0)


def shown(cell: str) -> list[tuple[str, str | None]]:
    return [(m[1], m[2]) for m in NUMBER.finditer(cell)]


def same(text: str, unit: str | None, path: str, measured: float) -> bool:
    """Whether ``text`` (with ``unit``) is ``measured`` as the docs round it."""
    number = float(text.replace(",", ""))
    decimals = len(text.split(".")[1]) if "." in text else 0
    scale = 1.0
    if path.endswith("_ms") and unit == "s":
        scale = 0.001
    elif path.endswith("_s") and unit == "ms":
        scale = 1000.0
    return abs(round(measured * scale, decimals) - number) <= 10**-decimals / 2 + 1e-9


def table_rows() -> dict[str, str]:
    """performance.md's table of results: first cell -> result cell."""
    text = PERFORMANCE.read_text().split("| measure | result |", 1)[1].split("\n\n", 1)[0]
    rows = {}
    for line in text.splitlines()[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        rows[cells[0]] = cells[1]
    return rows


def test_every_number_of_the_results_table_is_the_benchmarks() -> None:
    rows = table_rows()
    assert set(rows) == set(TABLE), set(rows) ^ set(TABLE)
    wrong = []
    for label, paths in TABLE.items():
        numbers = shown(label) if any(p.endswith(("workers", "ranks")) for p in paths) else []
        counts = [n for n in numbers if n[0].replace(",", "") in ("16", "1000")]
        cell = [
            *counts[: sum(p.endswith(("workers", "ranks")) for p in paths)],
            *shown(rows[label]),
        ]
        if len(cell) != len(paths):
            wrong.append(f"{label}: shows {len(cell)} numbers, the benchmark has {len(paths)}")
            continue
        for (text, unit), path in zip(cell, paths, strict=True):
            if not same(text, unit, path, value(path)):
                wrong.append(f"{label}: {text} {unit or ''} where {path} is {value(path):g}")
    assert not wrong, wrong


FIGURE = re.compile(r"\b(P\d+b?)\b")


@pytest.mark.parametrize("page", [p for p in PAGES if p != PERFORMANCE], ids=lambda p: p.name)
def test_a_p_figure_quoted_elsewhere_is_one_of_the_table(page: Path) -> None:
    rows = table_rows()
    wrong = []
    for line in page.read_text().splitlines():
        figures = set(FIGURE.findall(line))
        if not figures:
            continue
        allowed = {
            text for label, cell in rows.items() if FIGURE.match(label)[1] in figures  # type: ignore[index]
            for text, _ in shown(cell)
        }  # fmt: skip
        for text, unit in shown(line):
            if unit in ("ms", "s", "MB", "%") and text not in allowed:
                wrong.append(f"{text} {unit}: {line.strip()}")
    assert not wrong, f"{page.name} quotes figures the table does not show: {wrong}"
