"""The bridge's web page in a real browser (Playwright driving Debian's Chromium) against the
real bridge and a real Ray job whose four actor ranks pause at one line."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.conftest import BridgeProcess, Job, break_line

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


async def test_the_page_shows_live_ranks_running_and_pauses_them(
    bridge: BridgeProcess, run_job: Callable[[str], Job], browser: object
) -> None:
    """A live job (raydap.live.setup) with no breakpoint(): its ranks are listed running, and
    the page's Pause stops each where it is."""
    from playwright.async_api import Browser, expect

    assert isinstance(browser, Browser)
    job = run_job("live_ranks.py")
    page = await browser.new_page(viewport={"width": 1280, "height": 800})
    await page.goto(f"{bridge.url}/?token={bridge.token}")
    ranks = page.get_by_role("region", name=f"Job {job.job_id}").locator("tbody tr")
    running = ranks.filter(has_text="running (live)").filter(has_text="Rank.run")
    await expect(running).to_have_count(2, timeout=30_000)

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
