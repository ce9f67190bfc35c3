"""The bridge's web page in a real browser (Playwright driving Debian's Chromium) against the
real bridge and a real Ray job whose four actor ranks pause at one line."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import BridgeProcess, Job, break_line
from tests.waiting import until

pytestmark = pytest.mark.e2e


async def test_the_page_shows_four_ranks_merges_their_stacks_evaluates_and_continues(
    bridge: BridgeProcess, run_job: Callable[[str], Job], browser: object, tmp_path: Path
) -> None:
    from playwright.async_api import Browser, expect

    assert isinstance(browser, Browser)
    job = run_job("four_ranks.py")
    bridge.wait_records(job.job_id, count=4)
    page = await browser.new_page(viewport={"width": 1280, "height": 800})

    # Before logging in: a login form and no worker.
    await page.goto(bridge.url + "/")
    await expect(page.get_by_label("Token")).to_be_visible()
    await expect(page.get_by_role("button", name="Continue all")).to_have_count(0)
    assert job.job_id not in (await page.content())

    # The login link: the token leaves the address bar, the four ranks are listed.
    await page.goto(f"{bridge.url}/?token={bridge.token}")
    assert page.url == bridge.url + "/" and bridge.token not in page.url
    await expect(page.get_by_label("Token")).to_be_hidden()
    ranks = page.get_by_role("region", name=f"Job {job.job_id}").locator("tbody tr")
    await expect(ranks).to_have_count(4, timeout=20_000)
    await expect(ranks.filter(has_text="Rank.step")).to_have_count(4, timeout=20_000)
    line = break_line("four_ranks.py", "step")
    await expect(ranks.filter(has_text=f"four_ranks.py:{line}")).to_have_count(4)

    # Stacks: one group of four workers at the breakpoint's line; selecting it names them.
    await page.get_by_role("tab", name="Stacks").click()
    await page.get_by_label("Job", exact=True).select_option(job.job_id)
    await page.get_by_role("button", name="Refresh").click()
    step = page.get_by_role("button", name=re.compile(rf"^step \(four_ranks\.py:{line}\)"))
    await expect(step).to_have_count(1, timeout=20_000)
    await expect(step).to_contain_text("4 workers")
    await step.click()
    await expect(page.locator("#stack-workers li")).to_have_count(4)
    screenshots = Path(os.environ.get("RAYDAP_SCREENSHOTS", tmp_path))
    await page.screenshot(path=str(screenshots / "web-stacks.png"))

    # Evaluate across the ranks: four values side by side, differing ones marked.
    await page.get_by_role("tab", name="Workers").click()
    await page.get_by_label("Expression").fill("loss")
    await page.get_by_role("button", name="Evaluate").click()
    values = page.get_by_role("table", name="Values of loss").locator("tbody tr")
    await expect(values).to_have_count(4, timeout=20_000)
    shown = sorted(await values.locator("td.value").all_inner_texts())
    assert shown == ["0.25", "0.3333333333333333", "0.5", "1.0"]
    await expect(page.locator("tr.differs")).to_have_count(4)  # no two ranks agree
    await page.screenshot(path=str(screenshots / "web-page.png"))

    await page.get_by_label("Expression").fill("self.rank * 0")
    await page.get_by_role("button", name="Evaluate").click()
    same = page.get_by_role("table", name="Values of self.rank * 0").locator("tbody tr")
    await expect(same).to_have_count(4, timeout=20_000)
    await expect(page.locator("tr.differs")).to_have_count(0)

    # Continue all: the job's workers leave the list live, and the job finishes.
    await (
        page.get_by_role("region", name=f"Job {job.job_id}")
        .get_by_role("button", name="Continue all")
        .click()
    )
    await expect(page.get_by_role("region", name=f"Job {job.job_id}")).to_have_count(
        0, timeout=30_000
    )
    assert job.result() == "[0, 10, 20, 30]"


async def live_ranks_listed(bridge: BridgeProcess, job: Job, browser: object) -> tuple[Any, Any]:
    """The page logged in, with the two ranks of live_ranks.py listed running: (page, the
    locator of their rows, running)."""
    from playwright.async_api import Browser, expect

    assert isinstance(browser, Browser)
    page = await browser.new_page(viewport={"width": 1280, "height": 900})
    await page.goto(f"{bridge.url}/?token={bridge.token}")
    ranks = page.get_by_role("region", name=f"Job {job.job_id}").locator("tbody tr")
    running = ranks.filter(has_text="running (live)").filter(has_text="Rank.run")
    await expect(running).to_have_count(2, timeout=30_000)
    return page, running


async def test_the_page_shows_live_ranks_running_and_pauses_them(
    bridge: BridgeProcess, run_job: Callable[[str], Job], browser: object
) -> None:
    """A live job (raydap.live.setup) with no breakpoint(): its ranks are listed running, and
    the page's Pause stops each where it is."""
    from playwright.async_api import expect

    job = run_job("live_ranks.py")
    page, running = await live_ranks_listed(bridge, job, browser)
    ranks = page.get_by_role("region", name=f"Job {job.job_id}").locator("tbody tr")
    for still_running in (1, 0):
        await running.first.get_by_role("button", name=re.compile(r"^Pause Rank\.run")).click()
        await expect(running).to_have_count(still_running, timeout=30_000)
    await expect(ranks.filter(has_text="paused").filter(has_text="live_ranks.py:")).to_have_count(2)

    await page.get_by_label("Expression").fill("setattr(self, 'finish', 7) or rank")
    await page.get_by_role("button", name="Evaluate").click()
    values = page.get_by_role("table", name=re.compile("^Values of setattr")).locator("tbody tr")
    await expect(values).to_have_count(2, timeout=20_000)
    assert sorted(await values.locator("td.value").all_inner_texts()) == ["0", "1"]
    await (
        page.get_by_role("region", name=f"Job {job.job_id}")
        .get_by_role("button", name="Continue all")
        .click()
    )
    assert job.result() == "[7, 17]"


async def test_the_worker_view_shows_source_stack_and_variables_evaluates_steps_and_continues(
    bridge: BridgeProcess, run_job: Callable[[str], Job], browser: object, tmp_path: Path
) -> None:
    """A paused task opened in the page: its source read on its node with the stop marked, its
    frames, its locals (markup shown as text), the console in an outer frame, a step over,
    then Continue, with a second tab following along."""
    from playwright.async_api import Browser, expect

    assert isinstance(browser, Browser)
    job = run_job("worker_view.py")
    [record] = bridge.wait_records(job.job_id)
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    await page.goto(f"{bridge.url}/?token={bridge.token}")
    await page.get_by_role("button", name=re.compile(rf"^Open .* {record['id']}$")).click()

    source = page.get_by_role("list", name="Source of checksum")
    current = source.locator("[aria-current]")
    await expect(current).to_have_text(
        re.compile(r"breakpoint\(\)\s+# BREAK checksum"), timeout=20_000
    )
    assert await current.get_attribute("data-line") == str(break_line("worker_view.py", "checksum"))
    await expect(source.locator(".token.keyword").first).to_be_visible()  # highlighted
    variables = page.get_by_role("tree", name="Variables")
    await expect(variables.locator('[data-name="secret"]')).to_have_text("secret = 49")
    label = variables.locator('[data-name="label"] .value')
    await expect(label).to_have_text("'<img src=x onerror=alert(1)><b>bold</b>'")
    await variables.get_by_role("button", name="values", exact=True).click()
    items = variables.locator('[data-name="values"] [role="group"] [role="treeitem"]')
    await expect(items.filter(has_text="42")).to_have_count(1, timeout=10_000)
    screenshots = Path(os.environ.get("RAYDAP_SCREENSHOTS", tmp_path))
    await page.screenshot(path=str(screenshots / "web-worker.png"))

    # A second tab on the same worker follows what the first one does.
    second = await context.new_page()
    await second.goto(bridge.url + "/")
    await second.get_by_role("button", name=re.compile(rf"^Open .* {record['id']}$")).click()
    await expect(second.locator("#worker-source [aria-current]")).to_contain_text(
        "BREAK checksum", timeout=20_000
    )

    # The outer frame: its line marked, its locals; the console evaluates there, with history.
    await page.get_by_role("button", name=re.compile(r"^outer\b")).click()
    await expect(
        page.get_by_role("list", name="Source of outer").locator("[aria-current]")
    ).to_contain_text("CALLS checksum", timeout=10_000)
    await expect(variables.locator('[data-name="name"] .value')).to_have_text(
        "'<script>alert(1)</script>'"
    )
    console = page.get_by_label("Console", exact=True)
    await console.fill("values[1] - 2 * values[0]")
    await console.press("Enter")
    await expect(page.locator("#worker-output .result")).to_have_text(["28"], timeout=10_000)
    await console.press("ArrowUp")
    await expect(console).to_have_value("values[1] - 2 * values[0]")
    assert await page.locator("img, b, script:not([src])").count() == 0  # markup stayed text

    # Step over (from the stop's own frame): the marked line moves, in both tabs.
    await page.get_by_role("button", name=re.compile(r"^checksum\b")).click()
    await page.get_by_role("button", name="Step over").click()
    after = str(break_line("worker_view.py", "checksum") + 1)
    for tab in (page, second):
        await expect(tab.locator("#worker-source [aria-current]")).to_have_attribute(
            "data-line", after, timeout=20_000
        )
    await page.get_by_role("button", name="Continue", exact=True).click()
    assert job.result() == "98"
    await context.close()


async def test_a_breakpoint_set_in_the_gutter_of_a_live_rank_stops_every_rank(
    bridge: BridgeProcess, run_job: Callable[[str], Job], browser: object
) -> None:
    """A live job's rank opened while it runs and paused from the view; a conditional breakpoint
    set through the form stops only the rank it names, one set in the gutter stops both."""
    from playwright.async_api import expect

    job = run_job("live_ranks.py")
    page, running = await live_ranks_listed(bridge, job, browser)
    await running.first.get_by_role("button", name=re.compile(r"^Open ")).click()
    await expect(page.locator("#worker-state")).to_have_text("running", timeout=20_000)
    await page.get_by_role("button", name="Pause", exact=True).click()
    source = page.get_by_role("list", name="Source of run")
    await expect(source.locator("[aria-current]")).to_have_count(1, timeout=20_000)

    line = break_line("live_ranks.py", "loop")
    gutter = page.get_by_role("button", name=f"Breakpoint at line {line}", exact=True)

    def at_the_line() -> list[dict[str, Any]]:
        return [r for r in bridge.records(job.job_id) if r["state"] == "paused"
                and r["location"] and r["location"]["line"] == line]  # fmt: skip

    def running_ranks() -> list[dict[str, Any]]:
        workers = bridge.get("/api/v1/workers")["workers"]
        return [w for w in workers if w["job_id"] == job.job_id and w["state"] == "running"]

    # Through the form, a conditional one: only rank 1 stops there, rank 0 runs on.
    await page.get_by_label("Breakpoint line", exact=True).fill(str(line))
    await page.get_by_label("if", exact=True).fill("rank == 1")
    await page.get_by_role("button", name="Set breakpoint").click()
    await expect(gutter).to_have_attribute("aria-pressed", "true")
    await expect(page.locator("#worker-output")).to_contain_text("2 live workers", timeout=20_000)
    await page.get_by_role("button", name="Continue", exact=True).click()
    [stopped] = await until(lambda: at_the_line() or None, timeout=30, every=0.2,
                            what="rank 1 at the conditional breakpoint")  # fmt: skip
    asked = {"expression": "rank", "filter": {"job": job.job_id}}
    answers = {a["id"]: a for a in bridge.post("/api/v1/evaluate", asked)["results"]}
    assert answers[stopped["id"]]["result"] == "1"
    # rank 0 runs on (the view's Continue may still be on its way when rank 1 stops)
    await until(lambda: len(running_ranks()) == 1, timeout=30, every=0.2, what="rank 0 running")
    assert len(at_the_line()) == 1

    # In the gutter, cleared and set again without a condition: rank 0 stops there too.
    await gutter.click()
    await expect(gutter).to_have_attribute("aria-pressed", "false")
    await gutter.click()
    await expect(gutter).to_have_attribute("aria-pressed", "true")
    await until(lambda: len(at_the_line()) == 2, timeout=30, every=0.2,
                what="both ranks at the gutter's line")  # fmt: skip
    assert running_ranks() == []
    await gutter.click()  # cleared: the ranks run on once let go
    await expect(gutter).to_have_attribute("aria-pressed", "false")
    cleared = page.locator("#worker-output pre", has_text="lines none")
    await expect(cleared).to_have_count(2, timeout=20_000)
    bridge.post("/api/v1/evaluate", {"expression": "setattr(self, 'finish', 7) or 0",
                                     "filter": {"job": job.job_id}})  # fmt: skip
    bridge.post("/api/v1/continue", {"filter": {"job": job.job_id}})
    assert job.result() == "[7, 17]"
    await page.close()
