"""Rank sets on a real 2 x 2 (dp, tp) DeviceMesh over gloo: four live Ray ranks, each paused at
a breakpoint() after an all_reduce along tp. Their coordinates come from the process groups
torch made for the mesh, show wherever a rank is named, and aim group commands."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import pytest

from raydap.bridge.client.local_ray import LocalRay
from raydap.bridge.workers import meshes
from tests.e2e.conftest import JOBS, BridgeProcess, Job, break_line, start_job, stop_job
from tests.e2e.test_bridge import raydap
from tests.e2e.test_mcp import agent, call
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e

PLACES = {0: "dp=0 tp=0", 1: "dp=0 tp=1", 2: "dp=1 tp=0", 3: "dp=1 tp=1"}


async def test_mesh_coordinates_are_shown_and_continue_ranks_dp_0_lets_exactly_ranks_0_and_1_go(
    bridge: BridgeProcess, run_job: Callable[[str], Job], browser: object
) -> None:
    pytest.importorskip("torch", reason="torch==2.13.0 is in the test extras on Python 3.11")
    job = run_job("mesh_ranks.py")
    records = bridge.wait_records(
        job.job_id, 4, timeout=120,
        where=lambda r: r["state"] == "paused" and bool(r["mesh"]) and bool(r["task_name"]),
    )  # fmt: skip
    by_rank = {r["rank"]: r for r in records}
    assert {rank: meshes.text(r["mesh"]) for rank, r in by_rank.items()} == PLACES
    tp = {axis["dim"]: axis for axis in by_rank[1]["mesh"][0]["axes"]}["tp"]
    assert (tp["coord"], tp["size"]) == (1, 2)  # rank 1's tp group is ranks 0 and 1

    listing = raydap(bridge, "list")
    assert listing.returncode == 0, listing.stderr
    row = next(line for line in listing.stdout.splitlines() if by_rank[1]["id"] in line)
    assert "rank 1 dp=0 tp=1" in row, listing.stdout

    # The merged stacks apart by one dimension: where each dp coordinate stands
    split = raydap(bridge, "stacks", "--job", job.job_id, "--by", "dp")
    assert split.returncode == 0, split.stderr
    printed = split.stdout.splitlines()
    assert [line for line in printed if line.startswith("dp=")] == [
        "dp=0: 2 workers", "dp=1: 2 workers",
    ], split.stdout  # fmt: skip
    step = f"mesh_ranks.py:{break_line('mesh_ranks.py', 'step')}"
    stop_lines = [line for line in printed if step in line]
    assert len(stop_lines) == 2 and "r0 dp=0 tp=0, r1 dp=0 tp=1" in stop_lines[0], split.stdout
    status, refused = bridge.http_error("GET", f"/api/v1/stacks?job={job.job_id}&by=dp=0")
    assert status == 400 and "a mesh dimension is a name" in refused["error"], refused

    # Every door takes the same rank set: here the HTTP query the page's Find asks
    matched = bridge.get(f"/api/v1/workers?job={job.job_id}&ranks=tp=1")["workers"]
    assert sorted(r["rank"] for r in matched) == [1, 3]
    both = bridge.get(f"/api/v1/workers?job={job.job_id}&ranks=group=mesh_tp:2")["workers"]
    assert sorted(r["rank"] for r in both) == [2, 3]

    # The page: its Find takes `ranks:` as a rank set, which the bridge matches
    await find_on_the_page(bridge, browser, job.job_id)

    # An agent: the coordinates in its list, and an expression on the ranks of tp 1
    async with agent(bridge) as session:
        listed = await call(session, "list_workers", filter={"job": job.job_id})
        assert {w["rank"]: w["mesh"] for w in listed["workers"]} == PLACES
        tp_1 = {"job": job.job_id, "ranks": "tp=1"}
        evaluated = await call(session, "evaluate", expression="self.rank", filter=tp_1)
        assert sorted(r["result"] for r in evaluated["results"]) == ["1", "3"]
        by_tp = await call(session, "stacks", filter={"job": job.job_id}, by="tp")
        assert [(g["coord"], len(g["workers"])) for g in by_tp["groups"]] == [(0, 2), (1, 2)]
        assert {g["coord"]: sorted(g["workers"]) for g in by_tp["groups"]} == {
            tp: sorted(by_rank[r]["id"] for r in (tp, tp + 2)) for tp in (0, 1)
        }

    went = raydap(bridge, "continue", "--job", job.job_id, "--ranks", "dp=0")
    assert went.returncode == 0, went.stderr
    assert sorted(went.stdout.split(":", 1)[1].split()) == sorted(
        by_rank[rank]["id"] for rank in (0, 1)
    )

    def states() -> dict[int, str]:
        held = bridge.get(f"/api/v1/workers?job={job.job_id}")["workers"]
        return {r["rank"]: r["state"] for r in held}

    ran = wait_until(lambda: (s := states())[0] == s[1] == "running" and s, timeout=30,
                     what="ranks 0 and 1 to run on")  # fmt: skip
    assert (ran[2], ran[3]) == ("paused", "paused")

    refused = raydap(bridge, "continue", "--job", job.job_id, "--ranks", "tp=(1")
    assert refused.returncode != 0 and "rank set" in refused.stderr, refused.stderr
    async with agent(bridge) as session:
        rest = await call(session, "continue_workers", filter={"job": job.job_id, "ranks": "dp=1"})
    assert sorted(rest["continued"]) == sorted(by_rank[rank]["id"] for rank in (2, 3))
    assert job.result() == "[0, 10, 20, 30]"


async def find_on_the_page(bridge: BridgeProcess, browser: object, job_id: str) -> None:
    from playwright.async_api import Browser, expect

    assert isinstance(browser, Browser)
    page = await browser.new_page(viewport={"width": 1280, "height": 800})
    await page.goto(f"{bridge.url}/?token={bridge.token}")
    rows = page.get_by_role("region", name=f"Job {job_id}").locator("tbody tr")
    await expect(rows.filter(has_text="dp=0 tp=1")).to_have_count(1, timeout=20_000)
    find = page.get_by_label("Find")
    await find.fill("ranks: tp=1")
    shown = page.get_by_role("region", name=f"Job {job_id}").locator("tbody tr:visible")
    await expect(shown).to_have_count(2, timeout=10_000)
    await expect(shown.filter(has_text="rank 1 dp=0 tp=1")).to_have_count(1)
    await expect(shown.filter(has_text="rank 3 dp=1 tp=1")).to_have_count(1)
    await find.fill("ranks: tp=(1")
    await expect(page.get_by_role("status")).to_contain_text("not a rank set", timeout=10_000)
    await expect(shown).to_have_count(0)
    await find.fill("")
    await expect(shown).to_have_count(4)
    # The Stacks tab, one tree per dp coordinate: both ranks of each at the breakpoint
    await page.get_by_role("tab", name="Stacks").click()
    stacks_panel = page.get_by_role("tabpanel", name="Stacks")
    await page.get_by_label("one tree per").fill("dp")
    await stacks_panel.get_by_role("button", name="Refresh").click()
    for dp in (0, 1):
        tree = page.get_by_role("tree", name=f"Merged stacks, dp={dp}")
        await expect(tree.get_by_role("button").last).to_contain_text("2 workers", timeout=20_000)
    await page.get_by_label("one tree per").fill("dp=0")
    await stacks_panel.get_by_role("button", name="Refresh").click()
    await expect(page.locator("#stacks-tree")).to_contain_text("a mesh dimension is a name")
    await page.close()


def test_a_breakpoint_on_tp_1_stops_exactly_ranks_1_and_3(
    bridge: BridgeProcess, ray_head: LocalRay
) -> None:
    """Set while the ranks run, through the page's and every door's one path (the PUT):
    given to ranks 1 and 3 only, whose tp peers 0 and 2 then wait for them in the all_reduce."""
    pytest.importorskip("torch", reason="torch==2.13.0 is in the test extras on Python 3.11")
    job = start_job(ray_head.address, "mesh_ranks.py", {"PLAN": "loop"})
    try:
        stops_tp_1(bridge, job)
    finally:
        stop_job(job)


def stops_tp_1(bridge: BridgeProcess, job: Job) -> None:
    """The test's steps, on the job running (it is stopped whatever they find)."""

    def running() -> list[dict[str, object]] | None:
        held = bridge.get(f"/api/v1/workers?job={job.job_id}")["workers"]
        ready = [r for r in held if r["state"] == "running" and r["mesh"]]
        return ready if len(ready) == 4 else None

    wait_until(running, timeout=120, what="four live ranks with their coordinates")
    path, line = str(JOBS / "mesh_ranks.py"), break_line("mesh_ranks.py", "loop")
    captured_by_dp_1(bridge, job, f"{path}:{line}")
    ranked = {"path": path, "job": job.job_id, "ranks": "tp=1"}
    given = bridge.put("/api/v1/line-breakpoints", {**ranked, "breakpoints": [{"line": line}]})
    ranks = {r["id"]: r["rank"] for r in bridge.get(f"/api/v1/workers?job={job.job_id}")["workers"]}
    assert sorted(ranks[w["id"]] for w in given["workers"]) == [1, 3]
    assert all(w["breakpoints"] == [{"line": line, "verified": True}] for w in given["workers"])

    def stopped() -> dict[int, str] | None:
        held = bridge.get(f"/api/v1/workers?job={job.job_id}")["workers"]
        states = {r["rank"]: r["state"] for r in held}
        return states if states[1] == states[3] == "paused" else None

    states = wait_until(stopped, timeout=30, what="ranks 1 and 3 stopped")
    assert (states[0], states[2]) == ("running", "running")  # waiting in the all_reduce
    on_line = bridge.records(job.job_id)
    assert sorted((r["rank"], r["location"]["line"]) for r in on_line) == [(1, line), (3, line)]

    # Let them all finish: tp 1 sets the flag its tp peer reads, its breakpoint is cleared
    where = {"job": job.job_id, "ranks": "tp=1"}
    bridge.post("/api/v1/evaluate", {"expression": "self.finish = 1", "filter": where})
    cleared = bridge.put("/api/v1/line-breakpoints", {**ranked, "breakpoints": []})
    assert sorted(ranks[w["id"]] for w in cleared["workers"]) == [1, 3]
    bridge.post("/api/v1/continue", {"filter": where})
    assert job.result() == "[0, 10, 20, 30]"


def captured_by_dp_1(bridge: BridgeProcess, job: Job, where: str) -> None:
    """A capture point on the rank set dp=1, set from the command line: given to ranks 2 and 3
    only, each captured twice (its most), and the others never."""
    set_it = raydap(bridge, "capture", where, "--job", job.job_id, "--ranks", "dp=1",
                    "--interval", "0.2", "--most", "2", "--json")  # fmt: skip
    assert set_it.returncode == 0, set_it.stderr
    point = json.loads(set_it.stdout)
    assert point["ranks"] == "dp=1"

    def ranks_captured() -> list[int] | None:
        found = bridge.get(f"/api/v1/captures?point={point['id']}")["captures"]
        ranks = sorted(c["rank"] for c in found)
        return ranks if ranks == [2, 2, 3, 3] else None

    wait_until(ranks_captured, timeout=30, what="two captures of each of ranks 2 and 3")
    time.sleep(0.5)  # the other ranks pass the line every 0.05 s meanwhile: none of theirs
    assert ranks_captured() == [2, 2, 3, 3]
    bad = raydap(bridge, "capture", where, "--ranks", "dp=(1")
    assert bad.returncode != 0 and "rank set" in bad.stderr, bad.stderr
    bridge.delete(f"/api/v1/capture-points/{point['id']}")
