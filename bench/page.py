"""Benchmarks of the web page (issue 45; figures in docs/performance.md).

    python -m bench.page [--smoke] [--json PATH]

Debian's Chromium driven by Playwright, against a real ``raydap serve`` holding a real paused
debugpy (bench/debuggee.py, listed by the fake dashboard). Times are taken inside the page
(``performance.now()``), from the action to the moment what it shows is in the page.

W1  the worker view: a click on a paused worker's Open, to its source (the stop's line marked),
    call stack and top-level variables all shown. Target ≤ 300 ms.
W2  the merged stacks chart of 1,000 ranks (simulated: a tree of 1,000 workers over 40
    stacks 12 frames deep, as ``/api/v1/stacks`` gives it, one rank a straggler), drawn by the
    page's own code, to the next painted frame. Target ≤ 1 s.
W4  a hang's grid of 1,000 ranks that all differ (the worst case: no two rows agree), 8
    numbers each, drawn by the page's own code. Target ≤ 1 s.
W3  1,000 listed workers (simulated records, as the events feed gives them, put in the page's
    list): one keystroke in Find, to the next painted frame with the rows it leaves. Target
    ≤ 100 ms. Also the whole list re-drawn, as each change of a record does.
"""

from __future__ import annotations

import os
import platform
import statistics
from pathlib import Path
from typing import Any

from bench.harness import debuggee, fake_cluster, http, ms, run_benchmark, serve, until

CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]

# Resolves once every selector matches, checked each frame: what the person sees is there.
SHOWN = """(selectors) => new Promise((resolve) => {
  const check = () => selectors.every((s) => document.querySelector(s))
    ? resolve(performance.now()) : requestAnimationFrame(check);
  check();
})"""

OPEN_WORKER = f"""async ([id, shown]) => {{
  const start = performance.now();
  document.querySelector(`button[aria-label$=" ${{id}}"]`).click();
  return (await ({SHOWN})(shown)) - start;
}}"""

DRAW_CHART = """async (size) => {
  const stacks = 40, depth = 12;
  const groups = (members, level) => {  // one stack down to frame 2, then 40 of them
    const by = new Map();
    for (const n of members) {
      const key = level < 2 ? 0 : n % stacks;
      if (!by.has(key)) by.set(key, []);
      by.get(key).push(n);
    }
    return [...by.values()];
  };
  const branch = (level, members) => ({
    function: `frame_${level}_${members[0] % stacks}`, path: `/job/model_${level}.py`,
    line: 10 + level, workers: members.map((n) => `w${n}`),
    children: level === depth ? []
      : groups(members, level).map((group) => branch(level + 1, group)),
  });
  const tree = { children: [branch(1, [...Array(size).keys()])] };
  document.querySelector('#tab-stacks').click();
  await new Promise(requestAnimationFrame);
  const start = performance.now();
  drawStacksChart(tree, new Set(['w7']));
  await new Promise(requestAnimationFrame);
  return [performance.now() - start, document.querySelectorAll('#stacks-chart g.frame').length];
}"""

LIST_WORKERS = """async (size) => {
  document.querySelector('#tab-workers').click();
  const now = Date.now() / 1000;
  for (let n = 0; n < size; n++) {
    records.set(`w${n}`, {
      id: `w${n}`, job_id: '01000000', task_name: 'Trainer.step', kind: 'actor', rank: n,
      role: 'actor', parent: null, live: false, state: 'paused', exception: null,
      error: null, node_ip: `10.0.${n >> 8}.${n % 256}`, pid: 1000 + n,
      location: { path: `/job/train_${n % 7}.py`, line: 100 + (n % 50), function: 'step' },
      paused_since: now - n, clients: 0 });
  }
  const start = performance.now();
  renderWorkers();
  await new Promise(requestAnimationFrame);
  return performance.now() - start;
}"""

DRAW_GRID = """async (size) => {
  const seqs = [...Array(8).keys()].map((n) => n + 10);
  const cell = (rank, seq) => (seq === 17 && rank % 3 === 0
    ? { op: null, done: false, mark: 'missing' }
    : { op: rank % 2 ? 'all_reduce' : 'broadcast', done: seq < 17, mark: null });
  const rows = [...Array(size).keys()].map((rank) => ({
    ranks: [rank], workers: [`w${rank}`], cells: seqs.map((seq) => cell(rank, seq)) }));
  const grid = { job: '01000000', group_desc: 'default_pg', backend: 'nccl', seq: 17,
    op: 'all_reduce', summary: 'all_reduce #17 (default_pg): simulated', seqs, rows };
  document.querySelector('#tab-hangs').click();
  await new Promise(requestAnimationFrame);
  const start = performance.now();
  document.querySelector('#hang-grids').replaceChildren(...hangGrid(grid, null));
  await new Promise(requestAnimationFrame);
  return [performance.now() - start, document.querySelectorAll('.hang-grid tbody tr').length];
}"""

KEYSTROKE = """async (text) => {
  const find = document.querySelector('#worker-find');
  const start = performance.now();
  find.value = text;
  find.dispatchEvent(new Event('input'));
  await new Promise(requestAnimationFrame);
  return [performance.now() - start,
          [...document.querySelectorAll('tr[data-find]')].filter((row) => !row.hidden).length];
}"""


async def run(smoke: bool) -> dict[str, Any]:
    from playwright.async_api import async_playwright

    rounds = 3 if smoke else 20
    size = 200 if smoke else 1000
    machine = {"cpus": os.cpu_count(), "python": platform.python_version()}
    results: dict[str, Any] = {"machine": machine, "smoke": smoke}
    with (
        debuggee() as port,
        fake_cluster(0, (port,)) as dashboard_url,
        serve("--dashboard-url", dashboard_url) as (_, url, _dap),
    ):

        def held() -> str | None:
            records = http(url + "/api/v1/breakpoints")["breakpoints"]
            ready = [r for r in records if r["state"] == "paused" and r["location"]]
            return ready[0]["id"] if ready else None

        worker = await until(held, 60)
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
            page = await browser.new_page(viewport={"width": 1400, "height": 900})
            await page.goto(url + "/")
            await page.wait_for_selector(f'button[aria-label$=" {worker}"]')
            shown = ["#worker-source [aria-current]", "#worker-stack li",
                     '#worker-variables [data-name="payload"]']  # fmt: skip
            opened = []
            for _ in range(rounds):
                opened.append(await page.evaluate(OPEN_WORKER, [worker, shown]) / 1000)
                await page.click("#worker-close")
                await page.wait_for_selector(f'button[aria-label$=" {worker}"]')
            results["w1_worker_view"] = {**ms(opened), "target_ms": 300}
            drawn, frames = await page.evaluate(DRAW_CHART, size)
            results["w2_stacks_chart"] = {
                "ranks": size, "ms": round(drawn, 1), "frames_drawn": frames, "target_ms": 1000,
            }  # fmt: skip
            drawn, rows = await page.evaluate(DRAW_GRID, size)
            results["w4_hang_grid"] = {"ranks": size, "rows": rows, "ms": round(drawn, 1),
                                       "target_ms": 1000}  # fmt: skip
            redrawn = await page.evaluate(LIST_WORKERS, size)
            keys = [await page.evaluate(KEYSTROKE, text) for text in ("5", "51", "train_3", "")]
            results["w3_find"] = {
                "workers": size, "list_redrawn_ms": round(redrawn, 1),
                "keystroke_ms": [round(k, 1) for k, _ in keys],
                "keystroke_median_ms": round(statistics.median(k for k, _ in keys), 1),
                "rows_left": [n for _, n in keys], "target_ms": 100,
            }  # fmt: skip
            await browser.close()
    return results


def main() -> int:
    return run_benchmark(__doc__, run)


if __name__ == "__main__":
    raise SystemExit(main())
