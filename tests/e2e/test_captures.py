"""Capture points on a real Ray head: four live gloo ranks training, a capture point set from a
real DAP client and others over HTTP and MCP. Every rank is captured and runs on: no stop reaches
the client, the step counter keeps moving between captures, and the job's result is right. The
captures are then read as a pdb user reads them (in a real terminal) and in the web page (in a
real browser)."""

from __future__ import annotations

import ast
import asyncio
import itertools
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from raydap.bridge.client.local_ray import LocalRay
from tests.conftest import Connect
from tests.e2e.conftest import (
    JOBS,
    BridgeProcess,
    Job,
    break_line,
    require_tools,
    start_job,
    stop_job,
)
from tests.e2e.test_bridge import raydap
from tests.e2e.test_live import wait_workers
from tests.e2e.test_mcp import agent, call
from tests.e2e.test_websockets import ws
from tests.e2e.tmux import Terminal
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e

SCRIPT = str(JOBS / "capture_ranks.py")
STEP = break_line("capture_ranks.py", "step")
BUDGET_MS = 5000.0


def training(w: dict[str, Any]) -> bool:
    return w["state"] == "running" and w["live"] and w["task_name"] == "Rank.train"


def captures_of(bridge: BridgeProcess, point: str) -> list[dict[str, Any]]:
    return list(bridge.get(f"/api/v1/captures?point={point}")["captures"])


def local(capture: dict[str, Any], name: str) -> dict[str, Any]:
    return next(v for v in capture["frames"][0]["locals"] if v["name"] == name)


async def test_capture_points_record_every_rank_and_the_job_runs_on(
    ray_head: LocalRay, bridge: BridgeProcess, dap_connect: Connect, browser: object,
    tmp_path: Path,
) -> None:  # fmt: skip
    flag = tmp_path / "stop training"
    job = await asyncio.to_thread(start_job, ray_head.address, "capture_ranks.py",
                                  {"FLAG": str(flag)})  # fmt: skip
    try:
        point, capture = await look_without_stopping(bridge, job, dap_connect)
        await asyncio.to_thread(read_in_a_terminal, bridge, capture)
        screenshots = Path(os.environ.get("RAYDAP_SCREENSHOTS", tmp_path))
        await look_in_the_page(bridge, browser, point, screenshots)
    finally:
        flag.touch()
        result = await asyncio.to_thread(job.result, 90)
        stop_job(job)
    ranks = ast.literal_eval(result)
    assert [r[0] for r in ranks] == [0, 1, 2, 3] and all(r[2] for r in ranks)
    assert len({r[1] for r in ranks}) == 1  # lockstep: every rank did every step


async def look_without_stopping(
    bridge: BridgeProcess, job: Job, dap_connect: Connect
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Points set through DAP, HTTP and MCP; their captures read through each door. Gives the
    DAP session's point (still set) and one of its captures."""
    await asyncio.to_thread(wait_workers, bridge, job.job_id, training, 4)
    client = await dap_connect(bridge.dap_host, bridge.dap_port)
    await client.attach(follow={"job": job.job_id})

    # Each point here has a budget no busy CI host reaches: the budget is the integration
    # tests' (tests/integration/adapter/test_capture_points.py), what matters here is the doors.
    answer = await client.request("setBreakpoints", {
        "source": {"path": SCRIPT},
        "breakpoints": [{"line": STEP, "mode": "capture", "capture": {"budget_ms": BUDGET_MS}}],
    })  # fmt: skip
    assert answer.body["breakpoints"][0]["verified"] is True
    [point] = [p for p in bridge.get("/api/v1/capture-points")["points"] if p["line"] == STEP]
    assert point["owner"] == "a DAP session" and point["interval"] == 1.0

    def every_rank_twice() -> list[dict[str, Any]] | None:
        found = captures_of(bridge, point["id"])
        ranks = [c["rank"] for c in found]
        return found if all(ranks.count(r) >= 2 for r in range(4)) else None

    found = await asyncio.to_thread(wait_until, every_rank_twice, timeout=30, what="captures")
    assert {c["job"] for c in found} == {job.job_id} and {c["kind"] for c in found} == {"point"}
    for rank in range(4):  # one a second, and the rank trained on between two captures
        mine = [bridge.get(f"/api/v1/captures/{c['id']}") for c in found if c["rank"] == rank]
        steps = [int(local(c, "step")["value"]) for c in mine]
        assert all(b > a for a, b in itertools.pairwise(steps)), steps
        assert all(b["time"] - a["time"] >= 0.9 for a, b in itertools.pairwise(mine))
    whole = bridge.get(f"/api/v1/captures/{found[0]['id']}")
    loss = local(whole, "loss")
    assert (loss["shape"], loss["dtype"], loss["device"]) == ([2], "torch.float32", "cpu")
    assert whole["frames"][0]["line"] == STEP and whole["frames"][0]["function"] == "Rank.train"
    side_by_side = bridge.get(f"/api/v1/capture-points/{point['id']}/show?expression=self.rank")
    assert [(r["rank"], r["value"]["value"]) for r in side_by_side["ranks"]] == [
        (0, "0"), (1, "1"), (2, "2"), (3, "3")
    ]  # fmt: skip

    # A capture opened as a read-only stop, through the bridge's own doors.
    viewer = await dap_connect(bridge.dap_host, bridge.dap_port)
    await viewer.attach(capture=found[0]["id"])
    assert (await viewer.wait_event("stopped", timeout=10)).body["reason"] == "capture"
    [top] = (await viewer.request("stackTrace", {"threadId": 1, "levels": 1})).body["stackFrames"]
    assert (top["line"], top["name"]) == (STEP, "Rank.train")
    rank = await viewer.request("evaluate", {"expression": "self.rank", "frameId": top["id"]})
    assert rank.body["result"] == str(found[0]["rank"])
    refused = await viewer.request("continue", {"threadId": 1}, check=False)
    assert not refused.success and "read-only" in (refused.message or "")
    table = await asyncio.to_thread(
        raydap, bridge, "captures", "--point", point["id"], "--show", "self.rank"
    )
    assert [line.split() for line in table.stdout.splitlines()[1:]] == [
        ["rank", str(r), str(r)] for r in range(4)
    ]  # fmt: skip
    listed = (await asyncio.to_thread(raydap, bridge, "capture", "--list")).stdout
    assert point["id"] in listed and "(a DAP session)" in listed

    # The same line through HTTP for rank 2, and through MCP for rank 1, three captures each;
    # the events feed announces them as they come.
    async with (
        aiohttp.ClientSession() as http,
        http.ws_connect(ws(bridge, "/api/v1/events"), headers=bridge.auth) as feed,
    ):
        assert (await feed.receive_json(timeout=10))["kind"] == "snapshot"
        asked = {"path": SCRIPT, "line": STEP, "rank": 2, "interval": 0.2, "most": 3,
                 "budget_ms": BUDGET_MS}  # fmt: skip
        second = bridge.post("/api/v1/capture-points", asked)
        announced = await feed.receive_json(timeout=20)
        while announced["kind"] != "capture" or announced["capture"]["point"] != second["id"]:
            announced = await feed.receive_json(timeout=20)
        assert announced["capture"]["rank"] == 2
    assert second["owner"].endswith("(HTTP)") and second["id"] != point["id"]
    async with agent(bridge) as session:
        third = await call(session, "set_capture_point", path=SCRIPT, line=STEP, rank=1,
                           interval=0.2, most=3, budget_ms=BUDGET_MS)  # fmt: skip
        assert third["owner"] == "mcp (MCP)"

        def three_each() -> list[dict[str, Any]] | None:
            got = [captures_of(bridge, p["id"]) for p in (second, third)]
            return got[0] + got[1] if all(len(g) >= 3 for g in got) else None

        def counts() -> str:
            return str({p["id"]: p for p in bridge.get("/api/v1/capture-points")["points"]})

        taken = await asyncio.to_thread(
            wait_until, three_each, timeout=20, what="captures", context=counts
        )
        await asyncio.sleep(1.0)  # time for a fourth, which "most" forbids
        assert len(captures_of(bridge, second["id"])) == 3
        assert {(c["point"], c["rank"]) for c in taken} == {(second["id"], 2), (third["id"], 1)}
        listed = await call(session, "list_captures", point=third["id"])
        assert [c["rank"] for c in listed["captures"]] == [1, 1, 1]
        assert {p["id"] for p in listed["points"]} >= {point["id"], second["id"], third["id"]}
        read = await call(session, "read_capture", point=third["id"], expression="self.rank")
        assert [(r["rank"], r["value"]["value"]) for r in read["ranks"]] == [(1, "1")]
        whole = await call(session, "read_capture", capture=listed["captures"][0]["id"])
        assert whole["frames"][0]["line"] == STEP and whole["kind"] == "point"
        await call(session, "clear_capture_point", point=third["id"])
    assert bridge.http_error("DELETE", f"/api/v1/capture-points/{point['id']}")[0] == 403
    bridge.delete(f"/api/v1/capture-points/{second['id']}")
    left = {p["id"] for p in bridge.get("/api/v1/capture-points")["points"]}
    assert second["id"] not in left and third["id"] not in left

    assert [e for e in client.events if e.event == "stopped"] == []
    metrics = bridge.get_text("/metrics")
    counted = re.search(r"^raydap_captures_total (\S+)$", metrics, re.MULTILINE)
    assert counted is not None and float(counted[1]) >= len(found) + 6
    return point, found[0]


def read_in_a_terminal(bridge: BridgeProcess, capture: dict[str, Any]) -> None:
    """``raydap attach CAPTURE``: pdb's w, u, d, l and p over the captured frames; c refused."""
    require_tools(Path(shutil.which("tmux") or "tmux"))
    env = {"RAYDAP_URL": bridge.url, "RAYDAP_HISTORY": os.devnull}
    term = Terminal([sys.executable, "-m", "raydap.bridge", "attach", capture["id"][:10]], env)
    prompt = rf"\(raydap capture rank {capture['rank']} Rank\.train pid {capture['pid']}\)"

    def command(line: str) -> str:
        return term.command(line, prompt=prompt)

    try:
        screen = term.wait_for(lambda text: re.search(prompt, text) is not None)
        assert f"{SCRIPT}({STEP})Rank.train()" in screen, screen
        assert command("p self.rank") == str(capture["rank"])
        whole = bridge.get(f"/api/v1/captures/{capture['id']}")
        assert command("p step") == local(whole, "step")["value"]
        listing = command("l")
        assert re.search(rf"^\s*{STEP}\s+->.*# BREAK step", listing, re.MULTILINE), listing
        where = command("w").splitlines()
        assert where[-2] == f"> {SCRIPT}({STEP})Rank.train()", where
        assert command("u").startswith("> ") and command("d").startswith(f"> {SCRIPT}({STEP})")
        refused = command("c")
        assert "read-only" in refused, refused
        assert command("p self.rank") == str(capture["rank"])  # still there, still stopped
        term.type("q")
        term.wait_for("EXITED 0")
    finally:
        term.close()


async def look_in_the_page(
    bridge: BridgeProcess, browser: object, point: dict[str, Any], screenshots: Path
) -> None:
    """The page's Captures tab: the point and its captures listed, a new one added as it
    comes, one opened (source, frames, locals), and one value compared across the ranks."""
    from playwright.async_api import Browser, expect

    assert isinstance(browser, Browser)
    page = await browser.new_page(viewport={"width": 1280, "height": 900})
    await page.goto(f"{bridge.url}/?token={bridge.token}")
    await page.get_by_role("tab", name="Captures").click()
    points = page.get_by_role("table", name="Capture points").locator("tbody tr")
    await expect(points.filter(has_text=point["id"])).to_contain_text("a DAP session")
    rows = page.get_by_role("table", name="Captures").locator("tbody tr")
    mine = rows.filter(has_text=point["id"])
    before = await mine.count()
    assert before >= 8
    await expect(mine).not_to_have_count(before, timeout=10_000)  # the feed adds new ones

    # Opened: the point's line marked in its source, the frames listed, the locals shown.
    await mine.first.get_by_role("button", name=re.compile(r"^Open cap-")).click()
    source = page.get_by_role("list", name="Source of Rank.train")
    await expect(source.locator("[aria-current=true]")).to_contain_text("# BREAK step")
    frames = page.get_by_role("list", name="Captured frames").get_by_role("button")
    await expect(frames.first).to_have_text(f"Rank.train (capture_ranks.py:{STEP})")
    locals_ = page.get_by_role("list", name="Locals of Rank.train")
    await expect(locals_).to_contain_text("step = ")
    await expect(locals_).to_contain_text("shape [2] torch.float32 on cpu")
    await page.screenshot(path=str(screenshots / "web-captures.png"), full_page=True)

    # One captured value across the ranks, side by side.
    await page.get_by_label("Point", exact=True).select_option(point["id"])
    await page.get_by_label("Captured value").fill("self.rank")
    await page.get_by_role("button", name="Compare ranks", exact=True).click()
    compared = page.get_by_role("table", name=f"Captured self.rank at {point['id']}")
    await expect(compared.locator("tbody tr")).to_have_count(4)
    assert await compared.locator("td.value").all_inner_texts() == ["0", "1", "2", "3"]
    bars = page.locator("#compare-results .numbers-chart rect.bar")
    await expect(bars).to_have_count(4)
    assert await bars.last.locator("title").text_content() == "rank 3: self.rank = 3"

    # A capture in the worker view, read-only: its stop marked, its locals, nothing to move.
    await mine.first.get_by_role("button", name=re.compile(r"^Debug view of cap-")).click()
    await expect(page.locator("#worker-source [aria-current]")).to_contain_text(
        "# BREAK step", timeout=20_000
    )
    variables = page.get_by_role("tree", name="Variables")
    await expect(variables.locator('[data-name="step"]')).to_be_visible()
    for name in ("Continue", "Step over"):
        await expect(page.get_by_role("button", name=name, exact=True)).to_be_disabled()
    await page.get_by_role("button", name="Back to the list").click()
    await page.get_by_role("tab", name="Captures").click()

    # A point set from the page, then cleared there; the DAP session's own cannot be.
    await page.get_by_label("Path", exact=True).fill(SCRIPT)
    await page.get_by_label("Line", exact=True).fill(str(STEP))
    await page.get_by_label("Rank", exact=True).fill("3")
    await page.get_by_role("button", name="Set capture point", exact=True).click()
    ours = points.filter(has_text="rank 3")
    await expect(ours).to_have_count(1)
    await expect(ours.locator("td").nth(4)).not_to_have_text("0", timeout=10_000)
    await ours.get_by_role("button", name=re.compile("^Clear")).click()
    await expect(ours).to_have_count(0)
    theirs = points.filter(has_text=point["id"])
    await theirs.get_by_role("button", name=re.compile("^Clear")).click()
    await expect(page.locator("#status")).to_contain_text("belongs to a DAP session")
    await page.close()
