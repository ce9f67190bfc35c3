"""Hung torch.distributed jobs, diagnosed as a person would, on four gloo ranks of a real Ray
head that learn their rank only from ``init_process_group`` (nothing in their environment).

Rank 3 stuck in its data loader before the gradient all_reduce: the records and stacks name
the ranks while they run, the stacks show what rank 3 holds without pausing it, the watch calls
the job a suspected hang with rank 3 the straggler, never come to all_reduce #1, a pause of a
rank inside all_reduce answers pending at once and is kept: once rank 3 is freed through DAP,
the collective completes and rank 0 stops. Then the two hangs only the collective sequence
tells apart (a skipped all_reduce, another op at the same number), each written to a report
torch's own analyzer reads, and a job that progresses, never called hung."""

from __future__ import annotations

import ast
import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
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
    require_ptrace,
    start_bridge,
    start_job,
    stop_bridge,
    stop_job,
)
from tests.e2e.test_mcp import agent, call
from tests.e2e.test_websockets import ws
from tests.waiting import until as until_async
from tests.waiting import wait_until

HANG_AFTER = 4.0


def nodes(tree: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for child in tree["children"]:
        yield child
        yield from nodes(child)


@pytest.fixture(scope="module")
def hang_head() -> Iterator[LocalRay]:
    """A Ray head of this module's own: the shared one's bridge would hold these workers too."""
    with LocalRay(num_cpus=8) as head:
        yield head


@pytest.fixture(scope="module")
def watching_bridge(
    hang_head: LocalRay, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BridgeProcess]:
    """A bridge whose hang watch samples every second and calls 4 s of stillness a hang."""
    log = tmp_path_factory.mktemp("hangs") / "bridge.log"
    args = ["--address", hang_head.address, "--hang-after", str(HANG_AFTER),
            "--hang-sample-interval", "1"]  # fmt: skip
    running = start_bridge(args, log)
    yield running
    stop_bridge(running)


@pytest.fixture
def gloo_job(hang_head: LocalRay) -> Iterator[Job]:
    pytest.importorskip("torch", reason="torch==2.13.0 is in the test extras on Python 3.11")
    job = start_job(hang_head.address, "gloo_hang.py")
    yield job
    stop_job(job)


def until(check: Any, timeout: float, what: str, bridge: BridgeProcess) -> Any:
    """``check``'s first true answer, asked every 0.3 s; failing with the bridge's log."""
    return wait_until(
        check, timeout=timeout, every=0.3, what=what, context=lambda: bridge.log.read_text()[-3000:]
    )


async def test_a_hung_gloo_job_names_its_straggler_and_a_pending_pause_is_kept(
    watching_bridge: BridgeProcess,
    gloo_job: Job,
    dap_connect: Connect,
    browser: object,
    tmp_path: Path,
) -> None:
    require_ptrace()
    bridge, job = watching_bridge, gloo_job

    def hung_stacks() -> dict[str, Any] | None:
        answer = bridge.get(f"/api/v1/stacks?job={job.job_id}&locals=1")
        reducing = [n for n in nodes(answer["tree"]) if n["function"] == "all_reduce"]
        fetching = [n for n in nodes(answer["tree"]) if n["function"].endswith("fetch_batch")]
        if (
            len(answer["workers"]) == 4
            and reducing
            and len(reducing[0]["workers"]) == 3
            and fetching
        ):
            return answer
        return None

    answer = until(hung_stacks, 120, "stacks of 4 ranks, 3 in all_reduce", bridge)
    ranks = {w["id"]: w["rank"] for w in answer["workers"]}
    assert sorted(ranks.values()) == [0, 1, 2, 3]  # from torch: no RANK anywhere
    running = {r["id"]: r for r in bridge.get("/api/v1/workers")["workers"]}
    assert {running[w]["rank"] for w in ranks} == {0, 1, 2, 3}  # listed by rank, unpaused
    assert {running[w]["world_size"] for w in ranks} == {4}
    [reducing] = [n for n in nodes(answer["tree"]) if n["function"] == "all_reduce"]
    assert reducing["path"].endswith("torch/distributed/distributed_c10d.py")
    assert sorted(ranks[w] for w in reducing["workers"]) == [0, 1, 2]
    [fetching] = [n for n in nodes(answer["tree"]) if n["function"].endswith("fetch_batch")]
    [straggler_id] = fetching["workers"]
    assert ranks[straggler_id] == 3
    assert fetching["locals"][straggler_id]["step"] == "0"  # read without pausing it
    assert fetching["locals"][straggler_id]["ready"] == "False"
    # Ray's frames are folded: the outermost frames shown are the job's own
    assert {n["function"] for n in answer["tree"]["children"]} == {"Rank.train"}
    # Read in the live ranks themselves, over the debug connections the bridge holds: no
    # Ray driver of the bridge's, no py-spy, no ptrace (what a "restricted" pod allows)
    assert bridge.get("/healthz")["ray_driver"]["state"] == "idle"
    printed = subprocess.run(
        [sys.executable, "-m", "raydap.bridge", "stacks", "--job", job.job_id, "--locals"],
        capture_output=True, text=True, timeout=60, env=dict(os.environ, RAYDAP_URL=bridge.url,
                                                              RAYDAP_TOKEN=bridge.token),
    ).stdout  # fmt: skip
    assert "[3: r0, r1, r2]" in printed and "[1: r3]" in printed, printed
    assert "ready = False" in printed

    # The watch: a suspected hang, announced on the events feed within --hang-after + 10 s
    async with (
        aiohttp.ClientSession() as http,
        http.ws_connect(ws(bridge, "/api/v1/events"), headers=bridge.auth) as feed,
    ):
        announced = None
        deadline = time.monotonic() + HANG_AFTER + 10
        while announced is None:
            message = await feed.receive_json(timeout=max(0.1, deadline - time.monotonic()))
            if message["kind"] == "hang" and message["verdict"]["job"] == job.job_id:
                announced = message
    assert announced["type"] == "hang" and announced["verdict"]["state"] == "suspected_hang"
    assert announced["verdict"]["collective"]["missing"] == [3]  # said in the same message

    def verdict() -> dict[str, Any] | None:
        jobs = bridge.get("/api/v1/hangs")["jobs"]
        return next(
            (j for j in jobs if j["job"] == job.job_id and j["state"] == "suspected_hang"), None
        )

    hung = until(verdict, 5, "the suspected hang listed", bridge)
    said = subprocess.run(
        [sys.executable, "-m", "raydap.bridge", "hangs"], capture_output=True, text=True,
        timeout=60, env=dict(os.environ, RAYDAP_URL=bridge.url, RAYDAP_TOKEN=bridge.token),
    )  # fmt: skip
    assert said.returncode == 1, said.stderr  # a suspected hang, as a script can check
    assert f"job {job.job_id}: SUSPECTED HANG" in said.stdout
    assert f"straggler: rank 3 {straggler_id} in Rank.fetch_batch" in said.stdout, said.stdout
    native = bridge.get(f"/api/v1/stacks?job={job.job_id}&native=1")
    below = next(n for n in nodes(native["tree"]) if n["function"] == "all_reduce")
    assert any(n["path"].endswith(".so") or ".so." in n["path"] for n in nodes(below)), below
    [straggler] = hung["stragglers"]
    assert (straggler["rank"], straggler["worker"]) == (3, straggler_id)
    assert straggler["function"].endswith("fetch_batch") and straggler["path"].endswith(
        "gloo_hang.py"
    )
    assert straggler["why"] == "never joined all_reduce #1 (no collective yet)"
    assert hung["groups"][0]["ranks"] == [0, 1, 2] and hung["groups"][0]["wait"] == "all_reduce"
    collective = hung["collective"]
    assert (collective["group_desc"], collective["op"], collective["seq"]) == (
        "default_pg", "all_reduce", 1,
    )  # fmt: skip
    assert (collective["waiting"], collective["missing"]) == ([0, 1, 2], [3])
    assert hung["summary"].endswith("rank 3 in Rank.fetch_batch"), hung["summary"]
    with urllib.request.urlopen(bridge._request("/metrics"), timeout=10) as answer:
        exposed = answer.read().decode()
    assert f'raydap_job_suspected_hang{{job="{job.job_id}"}} 1.0' in exposed

    # The web page: a banner naming the straggler, and the job's stacks one click away
    from playwright.async_api import Browser, expect

    assert isinstance(browser, Browser)
    page = await browser.new_page(viewport={"width": 1280, "height": 800})
    await page.goto(f"{bridge.url}/?token={bridge.token}")
    banner = page.get_by_role("alert").filter(has_text="looks hung")
    await expect(banner).to_contain_text(f"Job {job.job_id}", timeout=20_000)
    await expect(banner).to_contain_text("rank 3 in Rank.fetch_batch")
    await page.get_by_role("button", name="Show stacks").click()
    merged = page.get_by_role("tree", name="Merged stacks")
    await expect(merged).to_contain_text("all_reduce", timeout=60_000)
    # The icicle chart: a frame as wide as its ranks; the frame only the straggler is in is red
    # and named so on hover; a click lists its ranks.
    chart = page.locator("#stacks-chart svg")
    reduce_frame = chart.locator("g.frame", has=page.locator("title", has_text="all_reduce ("))
    await expect(reduce_frame.locator("title")).to_contain_text(
        "3 workers (rank 0, rank 1, rank 2)"
    )
    stray = chart.locator("g.frame", has=page.locator("title", has_text="fetch_batch ("))
    await expect(stray.locator("title")).to_contain_text("straggler: rank 3")
    assert await stray.locator("rect").get_attribute("fill") == "#cf222e"
    assert await reduce_frame.locator("rect").get_attribute("fill") != "#cf222e"

    async def in_proportion() -> bool:  # once the chart's 250 ms entrance is over
        frames = (reduce_frame, stray)
        widths = [float(await f.locator("rect").get_attribute("width") or 0) for f in frames]
        return widths[1] > 0 and widths[0] == pytest.approx(3 * widths[1], rel=0.01)

    await until_async(in_proportion, timeout=10, every=0.1, what="frames as wide as their ranks")
    await expect(merged.get_by_role("button", name=re.compile("fetch_batch"))).to_contain_text(
        "1 worker, straggler"
    )
    screenshots = Path(os.environ.get("RAYDAP_SCREENSHOTS", tmp_path))
    await page.screenshot(path=str(screenshots / "web-stacks-chart.png"))
    await stray.click()
    await expect(page.locator("#stack-workers li")).to_have_count(1)
    await expect(page.locator("#stack-workers")).to_contain_text(straggler_id)
    await page.close()

    # Pause rank 0, inside all_reduce: answered at once, pending, saying where it waits
    [rank0] = [w for w, r in ranks.items() if r == 0]
    started = time.monotonic()
    status, pending = bridge.post_any(f"/api/v1/workers/{rank0}/pause")
    assert status == 202 and pending["pending"] is True, pending
    assert time.monotonic() - started < 10
    assert "all_reduce" in pending["reason"] and "distributed_c10d.py" in pending["reason"]

    # Pause rank 3 (it runs Python: paused at once), free it through DAP, let it go on
    paused = bridge.post(f"/api/v1/workers/{straggler_id}/pause")["paused"]
    assert paused["rank"] == 3

    async def free_rank_3() -> None:
        client = await dap_connect(bridge.dap_host, bridge.dap_port)
        await client.attach(breakpoint=straggler_id, token=bridge.token)
        stopped = await client.wait_event("stopped", timeout=30)
        thread = stopped.body["threadId"]
        trace = await client.request("stackTrace", {"threadId": thread})
        [frame] = [f for f in trace.body["stackFrames"] if f["name"].endswith("fetch_batch")]
        await client.request(
            "evaluate", {"expression": "ready = True", "frameId": frame["id"], "context": "repl"}
        )
        await client.request("continue", {"threadId": thread})
        await client.close()

    await free_rank_3()

    # The collective completes, and rank 0 stops right after it, as promised
    def rank0_paused() -> dict[str, Any] | None:
        return next((r for r in bridge.records(job.job_id) if r["id"] == rank0
                     and r["state"] == "paused" and r["location"]), None)  # fmt: skip

    stopped = until(rank0_paused, 60, "rank 0 paused after all_reduce", bridge)
    assert stopped["rank"] == 0
    # It stops as all_reduce returns (debugpy's first event there), the collective done: the
    # other three ranks finished their task and run nothing any more.
    where = stopped["location"]
    assert (where["function"], where["path"].endswith("distributed_c10d.py")) == (
        "all_reduce",
        True,
    ) or (where["function"] == "train" and where["line"] > break_line("gloo_hang.py", "reduce"))

    def only_rank0_left() -> bool:  # the dashboard reports finished tasks a moment later
        after = bridge.get(f"/api/v1/stacks?job={job.job_id}")
        return [w["id"] for w in after["workers"]] == [rank0]

    until(only_rank0_left, 30, "ranks 1-3 finished past all_reduce", bridge)
    bridge.post("/api/v1/continue", {"filter": {"job": job.job_id}})
    result = job.result(timeout=60)
    values = [float(v) for v in result.strip("[]").split(",")]
    assert len(values) == 4 and len(set(values)) == 1  # every rank took part in all_reduce


def test_a_verl_colocated_group_is_named_by_rank_and_role(
    bridge: BridgeProcess, ray_head: LocalRay, tmp_path: Path
) -> None:
    """Running (read with py-spy), the ranks are named by the actor's name and the method's
    role; paused in the critic's method, by their records."""
    go = tmp_path / "go"
    job = start_job(ray_head.address, "verl_roles.py", env={"VERL_GO": str(go)})
    try:

        def running() -> list[dict[str, Any]] | None:
            workers = bridge.get(f"/api/v1/stacks?job={job.job_id}")["workers"]
            return workers if len(workers) == 2 else None

        workers = until(running, 60, "both ranks running actor_update_policy", bridge)
        assert sorted((w["rank"], w["role"]) for w in workers) == [(0, "actor"), (1, "actor")]
        go.touch()
        records = bridge.wait_records(
            job.job_id, 2, where=lambda r: r["state"] == "paused" and r["role"] is not None
        )
        assert sorted((r["rank"], r["role"]) for r in records) == [(0, "critic"), (1, "critic")]
        assert all(r["task_name"] == "WorkerDict.critic_compute_values" for r in records)
        listed = subprocess.run(
            [sys.executable, "-m", "raydap.bridge", "list"], capture_output=True, text=True,
            timeout=60, env=dict(os.environ, RAYDAP_URL=bridge.url, RAYDAP_TOKEN=bridge.token),
        ).stdout  # fmt: skip
        assert "rank 1 (critic)" in listed, listed
        bridge.post("/api/v1/continue", {"filter": {"job": job.job_id}})
        assert job.result() == "[0, 10]"
    finally:
        stop_job(job)


# -- the collective sequence ------------------------------------------------------------------


@pytest.fixture
def collective_job(hang_head: LocalRay) -> Iterator[Any]:
    """``collective_hangs.py`` in the way asked (stopped, with its actors, at the end)."""
    pytest.importorskip("torch", reason="torch==2.13.0 is in the test extras on Python 3.11")
    jobs: list[Job] = []

    def start(hang: str) -> Job:
        jobs.append(start_job(hang_head.address, "collective_hangs.py", env={"HANG": hang}))
        return jobs[-1]

    yield start
    for job in jobs:
        stop_job(job)


def collective_verdict(bridge: BridgeProcess, job: Job) -> dict[str, Any]:
    """The job's suspected hang once its recorders are read, within --hang-after + 10 s of
    the ranks standing still (their start on this machine aside)."""

    def hung() -> dict[str, Any] | None:
        for verdict in bridge.get("/api/v1/hangs")["jobs"]:
            if verdict["job"] == job.job_id and verdict.get("collective") and verdict["report"]:
                return verdict  # type: ignore[no-any-return]
        return None

    return until(hung, 120, "a collective verdict with its report", bridge)  # type: ignore[no-any-return]


def ranks_of(bridge: BridgeProcess, job: Job) -> dict[int, str]:
    workers = bridge.get("/api/v1/workers")["workers"]
    return {
        w["rank"]: w["id"] for w in workers if w["job_id"] == job.job_id and w["rank"] is not None
    }


def analyzed(report: str) -> str:
    """What torch's own Flight Recorder analyzer says of a report's dumps."""
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.flight_recorder.fr_trace", report],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout + done.stderr  # it reports through logging


async def test_a_skipped_all_reduce_names_the_rank_that_never_joined_and_a_report_outlives_the_job(
    watching_bridge: BridgeProcess, collective_job: Any, browser: object, tmp_path: Path
) -> None:
    bridge = watching_bridge
    job = collective_job("skip")
    verdict = collective_verdict(bridge, job)
    found = verdict["collective"]
    assert (found["group"], found["group_desc"], found["op"], found["seq"]) == (
        "0", "default_pg", "all_reduce", 6,
    )  # fmt: skip
    assert (found["waiting"], found["missing"], found["mismatch"]) == ([0, 1, 3], [2], [])
    assert "all_reduce #6 (default_pg): rank 2 never joined (its last: #5)" in verdict["summary"]
    ranks = ranks_of(bridge, job)
    # A rank set aims at ranks as people name them: the first two, and rank 3
    picked = bridge.get(f"/api/v1/stacks?job={job.job_id}&ranks=0-1,3")
    assert sorted(w["rank"] for w in picked["workers"]) == [0, 1, 3]
    # Rank 2 finished (idle in Ray's task loop): named first, where it last called all_reduce
    first = verdict["stragglers"][0]
    assert (first["rank"], first["worker"]) == (2, ranks[2])
    assert (first["function"], first["line"]) == (
        "train",
        break_line("collective_hangs.py", "reduce"),
    )
    assert first["path"].endswith("collective_hangs.py")
    assert first["why"] == "never joined all_reduce #6 (its last: #5)"
    assert verdict["unread"] == []
    # Ranks 0, 1, 3 issued #6 and block in work.wait() lines later: both places are said
    called, blocked = (
        break_line("collective_hangs.py", "reduce"),
        break_line("collective_hangs.py", "wait"),
    )
    waits = {(w["rank"], w["op"], w["seq"], w["called_line"], w["blocked_line"])
             for w in verdict["waits"]}  # fmt: skip
    assert waits == {(r, "all_reduce", 6, called, blocked) for r in (0, 1, 3)}, verdict["waits"]
    assert (f"ranks 0, 1, 3 wait for all_reduce #6 (called at jobs/collective_hangs.py:{called}"
            f"), blocked at jobs/collective_hangs.py:{blocked}") in verdict["summary"]  # fmt: skip

    # The report: the verdict, the stacks with locals, a dump per rank that torch reads
    report = Path(verdict["report"])
    assert report.parent == Path(os.environ["RAYDAP_HANG_REPORTS"])
    assert {p.name for p in report.iterdir()} == {
        "verdict.json", "stacks.json", "rank_0", "rank_1", "rank_2", "rank_3",
    }  # fmt: skip
    assert all(oct(p.stat().st_mode & 0o777) == "0o600" for p in report.iterdir())
    saved = json.loads((report / "verdict.json").read_text())
    assert saved["collective"]["missing"] == [2] and saved["report"] == str(report)
    stacks_then = json.loads((report / "stacks.json").read_text())
    assert any("locals" in n for n in nodes(stacks_then["tree"]))
    said = analyzed(str(report))
    assert "Not all ranks joining collective, sequence number: 6" in said, said
    assert "missing ranks: {2}" in said, said

    # Everywhere a person looks: the CLI, /metrics, the web page (the events feed and VS Code
    # share the verdict's JSON: their tests read the same fields)
    env = dict(os.environ, RAYDAP_URL=bridge.url, RAYDAP_TOKEN=bridge.token)
    printed = subprocess.run([sys.executable, "-m", "raydap.bridge", "hangs"], env=env,
                             capture_output=True, text=True, timeout=60).stdout  # fmt: skip
    assert (
        "collective: all_reduce #6 in group 0 (default_pg): waiting 0, 1, 3; missing 2" in printed
    )
    assert f"straggler: rank 2 {ranks[2]} in train" in printed, printed
    assert "waits: rank 0 for all_reduce #6 (gloo) called at " in printed, printed
    with urllib.request.urlopen(bridge._request("/metrics"), timeout=10) as answer:
        exposed = answer.read().decode()
    assert (f'raydap_collective_stuck_seq{{group="0",job="{job.job_id}",op="all_reduce"}} 6.0'
            in exposed), exposed  # fmt: skip
    from playwright.async_api import Browser, expect

    assert isinstance(browser, Browser)
    page = await browser.new_page()
    await page.goto(f"{bridge.url}/?token={bridge.token}")
    alert = page.get_by_role("alert").filter(has_text=job.job_id)
    await expect(alert).to_contain_text("rank 2 never joined", timeout=20_000)
    await expect(alert).to_contain_text("ranks 0, 1, 3 wait for all_reduce #6 (called at")
    link = alert.get_by_role("link", name="Download report")
    assert await link.get_attribute("href") == f"/api/v1/hangs/{job.job_id}/report.tar.gz"
    # The grid: ranks 0, 1, 3 wait in #6 (rows of agreeing ranks are shared); rank 2's #6 is
    # the marked gap
    await page.get_by_role("tab", name="Hangs").click()
    grid = page.get_by_role("table", name=f"Collectives of job {job.job_id}, default_pg (gloo)")
    skipped = grid.locator('tr[data-ranks="2"] td')
    await expect(skipped.last).to_have_text("missing", timeout=20_000)
    columns = await grid.locator("thead th").all_inner_texts()
    assert columns[-1] == "#6" and columns[0] == "Ranks"
    for rank in (0, 1, 3):
        await expect(grid.locator(f'tr[data-ranks~="{rank}"] td').last).to_have_text("all_reduce")
    assert await skipped.last.get_attribute("data-mark") == "missing"
    await expect(skipped.nth(-2)).to_have_text("all_reduce")  # #5, its last
    assert await grid.locator("[data-mark]").count() == 1
    section = page.get_by_role("region", name=f"Job {job.job_id} collectives")
    await expect(section).to_contain_text("rank 2 never joined")
    await expect(section.get_by_role("link", name="Download report")).to_be_visible()
    screenshots = Path(os.environ.get("RAYDAP_SCREENSHOTS", tmp_path))
    await page.screenshot(path=str(screenshots / "web-hang-grid.png"))
    await page.close()

    # After the job: the report stays, `raydap hangs --report` reads it, and saves it whole
    stop_job(job)
    later = subprocess.run(
        [sys.executable, "-m", "raydap.bridge", "hangs", "--report", job.job_id], env=env,
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert later.returncode == 0, later.stderr
    assert f"report {report}" in later.stdout and "rank 2 never joined" in later.stdout
    assert "fr_trace" in later.stdout
    archive = tmp_path / "report.tar.gz"
    subprocess.run(
        [sys.executable, "-m", "raydap.bridge", "hangs", "--report", job.job_id, "--save",
         str(archive)], env=env, check=True, timeout=60,
    )  # fmt: skip
    with tarfile.open(archive) as tar:
        assert {Path(n).name for n in tar.getnames()} >= {"verdict.json", "rank_2"}


async def test_another_op_at_the_same_number_is_named_with_its_call_site(
    watching_bridge: BridgeProcess, collective_job: Any, browser: object
) -> None:
    bridge = watching_bridge
    job = collective_job("mismatch")
    verdict = collective_verdict(bridge, job)
    found = verdict["collective"]
    assert (found["op"], found["seq"], found["waiting"], found["missing"]) == (
        "all_reduce", 4, [0, 1, 2, 3], [],
    )  # fmt: skip
    [odd] = found["mismatch"]
    line = break_line("collective_hangs.py", "broadcast")
    assert (odd["rank"], odd["op"], odd["sizes"], odd["dtypes"], odd["line"]) == (
        1, "broadcast", [[4]], ["Float"], line,
    )  # fmt: skip
    assert odd["path"].endswith("collective_hangs.py")
    assert (f"rank 1 called broadcast at jobs/collective_hangs.py:{line} where ranks 0, 2, 3 "
            "called all_reduce") in verdict["summary"]  # fmt: skip
    first = verdict["stragglers"][0]
    assert (first["rank"], first["line"]) == (1, line)
    said = analyzed(verdict["report"])
    assert "Culprit rank 1" in said and "broadcast" in said, said
    # The grid marks rank 1's odd op at #4, and nothing else
    grid = bridge.get(f"/api/v1/hangs/{job.job_id}/grid")
    assert grid["seq"] == 4 and [1] in [row["ranks"] for row in grid["rows"]]
    from playwright.async_api import Browser, expect

    assert isinstance(browser, Browser)
    page = await browser.new_page()
    await page.goto(f"{bridge.url}/?token={bridge.token}")
    await page.get_by_role("tab", name="Hangs").click()
    table = page.get_by_role("table", name=re.compile(rf"^Collectives of job {job.job_id},"))
    odd_cell = table.locator('tr[data-ranks="1"] td[data-mark="mismatch"]')
    await expect(odd_cell).to_have_text("broadcast (odd)", timeout=20_000)
    assert await table.locator("[data-mark]").count() == 1
    await page.close()


async def test_a_hang_inside_a_device_meshs_tp_group_is_named_as_the_mesh_names_it(
    watching_bridge: BridgeProcess, hang_head: LocalRay, browser: object
) -> None:
    """A 2 x 2 (dp, tp) DeviceMesh: rank 3 skips the third all_reduce along tp, so its tp peer,
    rank 2, waits in it. The verdict names the tp group [2, 3] and global ranks, and so do the
    page's grid (its rows with their coordinates) and an agent."""
    pytest.importorskip("torch", reason="torch==2.13.0 is in the test extras on Python 3.11")
    bridge = watching_bridge
    job = start_job(hang_head.address, "mesh_ranks.py", {"PLAN": "hang"})
    try:
        verdict = collective_verdict(bridge, job)
        found = verdict["collective"]
        assert (found["group_desc"], found["mesh_dim"], found["group_ranks"]) == (
            "mesh_tp", "tp", [2, 3],
        )  # fmt: skip
        assert (found["waiting"], found["missing"]) == ([0], [1])  # ranks of the tp group
        seq = found["seq"]
        said = (
            f"all_reduce #{seq} (the tp group [2, 3]): rank 3 never joined (its last: #{seq - 1})"
        )
        assert said in verdict["summary"], verdict["summary"]
        first = verdict["stragglers"][0]
        assert (first["rank"], first["coords"]) == (3, {"dp": 1, "tp": 1})

        async with agent(bridge) as session:
            hangs = await call(session, "hangs", job=job.job_id)
        [told] = hangs["jobs"]
        assert said in told["summary"] and told["collective"]["group_ranks"] == [2, 3]

        from playwright.async_api import Browser, expect

        assert isinstance(browser, Browser)
        page = await browser.new_page()
        await page.goto(f"{bridge.url}/?token={bridge.token}")
        alert = page.get_by_role("alert").filter(has_text=job.job_id)
        await expect(alert).to_contain_text("Straggler: rank 3 dp=1 tp=1", timeout=20_000)
        await page.get_by_role("tab", name="Hangs").click()
        grid = page.get_by_role("table", name=f"Collectives of job {job.job_id}, mesh_tp (gloo)")
        skipped = grid.locator('tr[data-ranks="3"]')  # global ranks, as the summary says
        await expect(skipped.locator("td").last).to_have_text("missing", timeout=20_000)
        await expect(skipped.get_by_role("rowheader")).to_contain_text("dp=1 tp=1")
        waiting = grid.locator('tr[data-ranks="2"]')
        await expect(waiting.get_by_role("rowheader")).to_contain_text("dp=1 tp=0")
        await expect(waiting.locator("td").last).to_have_text("all_reduce")
        await page.close()
    finally:
        stop_job(job)


def test_a_progressing_job_is_never_called_hung_and_a_rank_that_dies_is_named_at_once(
    watching_bridge: BridgeProcess, collective_job: Any
) -> None:
    bridge = watching_bridge
    job = collective_job("progress")
    until(lambda: len(ranks_of(bridge, job)) == 4, 120, "the four ranks named", bridge)

    def watched() -> dict[str, Any] | None:
        return next((v for v in bridge.get("/api/v1/hangs")["jobs"] if v["job"] == job.job_id),
                    None)  # fmt: skip

    until(watched, 30, "the job watched", bridge)
    # Ranks 1-3 wait for rank 0 in the same all_reduce at every sample: stacks that stand
    # still, one group waiting, which the stacks alone call a hang. The recorders count on.
    # A check that nothing happens: three times --hang-after of samples, none a hang.
    states, still = set(), False
    deadline = time.monotonic() + 3 * HANG_AFTER
    while time.monotonic() < deadline:
        verdict = watched()
        assert verdict is not None
        states.add(verdict["state"])
        still |= any(g["wait"] == "all_reduce" and g["ranks"] == [1, 2, 3]
                     for g in verdict["groups"])  # fmt: skip
        time.sleep(0.5)
    assert states == {"progressing"}
    assert still  # the stacks alone would have called it hung

    # Rank 2 dies (SIGKILL, as the OOM killer sends): named at once, not waited for
    rank2 = next(w for w in bridge.get("/api/v1/workers")["workers"]
                 if w["job_id"] == job.job_id and w["rank"] == 2)  # fmt: skip
    os.kill(rank2["pid"], signal.SIGKILL)
    died = time.monotonic()

    def named() -> dict[str, Any] | None:
        verdict = watched()
        return verdict if verdict and verdict["dead"] and verdict["report"] else None

    verdict = until(named, 60, "the dead rank named", bridge)
    print(f"named {time.monotonic() - died:.1f} s after it died:", verdict["summary"])
    assert verdict["state"] == "suspected_hang"
    dead = verdict["dead"]
    assert [(d["rank"], d["pid"], d["node_ip"]) for d in dead] == [
        (2, rank2["pid"], rank2["node_ip"])
    ]
    assert dead[0]["cause"] and "SYSTEM_ERROR" in dead[0]["cause"], dead  # Ray's words
    assert verdict["summary"].startswith(f"rank 2 died (pid {rank2['pid']} on "), verdict
    assert "none missing" not in verdict["summary"]
    assert next(u for u in verdict["unread"] if u["rank"] == 2)["reason"].startswith("it died")
    saved = json.loads((Path(verdict["report"]) / "verdict.json").read_text())
    assert saved["dead"][0]["pid"] == rank2["pid"]
    env = dict(os.environ, RAYDAP_URL=bridge.url, RAYDAP_TOKEN=bridge.token)
    printed = subprocess.run([sys.executable, "-m", "raydap.bridge", "hangs"], env=env,
                             capture_output=True, text=True, timeout=60).stdout  # fmt: skip
    assert f"rank 2 died (pid {rank2['pid']}" in printed, printed


def phase(state: Path, name: str) -> None:
    """Tell the job's ranks the next phase, whole: rank 0 reads the file every step, and a
    read between ``write_text``'s truncate and its write finds it empty, an unknown phase that
    ends the job (the likeliest cause of a run here whose job ended 0.9 s after the write)."""
    (state / "phase.new").write_text(name)
    (state / "phase.new").rename(state / "phase")


STOP_TIMEOUT = 6  # the job's own collective timeout (tests/e2e/jobs/stopped_rank.py)
STOPPED_FOR = STOP_TIMEOUT + 3  # well past it


async def test_a_rank_stopped_past_its_groups_timeout_does_not_end_its_peer(
    watching_bridge: BridgeProcess, hang_head: LocalRay, dap_connect: Connect, tmp_path: Path
) -> None:
    """Two gloo ranks with a 6 s collective timeout. Rank 0 alone stops, first by a
    conditional line breakpoint set on the running job with nothing else (the page's gutter,
    an agent), held for three timeouts: the bridge raised both ranks' timeouts, and waited for
    each one's next collective, before the breakpoint was armed, so rank 1 waits out the stop
    and the job finishes right. (Issue "fleet": rank 0 stopped 0.14 s after the PUT, rank 1
    had issued its next collective with 6 s, and died.) Then by its own ``breakpoint()``, in a
    session following the job, which raised them when it began. Then the plain
    ``breakpoint()`` nobody expected, as docs/hangs.md says: rank 1 already waits with its
    6 s and fails, though the bridge raised its timeout as soon as it held the stop."""
    pytest.importorskip("torch", reason="torch==2.13.0 is in the test extras on Python 3.11")
    bridge, script = watching_bridge, str(JOBS / "stopped_rank.py")
    state = tmp_path / "debugged"
    state.mkdir()
    job = start_job(hang_head.address, "stopped_rank.py", env={"STATE_DIR": str(state)})

    def timeouts(folder: Path = state) -> list[float]:
        if job.process.poll() is not None:  # ended before the test ends it: say why
            raise AssertionError("the job ended:\n" + job.result(timeout=1))
        try:
            return [float((folder / f"timeout-{r}").read_text()) for r in (0, 1)]
        except (FileNotFoundError, ValueError):
            return []

    def rank_states() -> dict[int, str]:
        workers = bridge.get("/api/v1/workers")["workers"]
        return {w["rank"]: w["state"] for w in workers if w["job_id"] == job.job_id}

    async def hold_rank0(stopped: Any, held_for: float) -> None:
        """Rank 0 stops, alone, for ``held_for`` seconds while rank 1 waits."""
        for _ in range(60):  # a job that ends first says why
            if await stopped():
                break
            timeouts()
        else:
            raise AssertionError("rank 0 did not stop within 60 s")
        until(lambda: rank_states() == {0: "paused", 1: "running"}, 30, "rank 0 stopped", bridge)
        await asyncio.sleep(held_for)
        assert rank_states() == {0: "paused", 1: "running"}  # rank 1 still waits, alive

    try:
        until(lambda: timeouts() == [STOP_TIMEOUT] * 2, 60, "both ranks training", bridge)
        until(lambda: set(rank_states()) == {0, 1}, 60, "both ranks held, live", bridge)

        # A capture point looks without stopping: it raises nothing (issue "fleet": it turned
        # off every live job's timeouts)
        line = break_line("stopped_rank.py", "grad")
        point = bridge.post("/api/v1/capture-points", {"path": script, "line": line,
                                                       "job": job.job_id})  # fmt: skip
        until(lambda: bridge.get(f"/api/v1/captures?point={point['id']}")["captures"], 30,
              "a capture taken", bridge)  # fmt: skip
        await asyncio.sleep(1)  # the timeouts watch acts within a quarter of a second
        assert timeouts() == [STOP_TIMEOUT] * 2
        bridge.delete(f"/api/v1/capture-points/{point['id']}")

        # A conditional line breakpoint on the running job, rank 0 only, and nothing else
        rank0_only = [{"line": line, "condition": "self.rank == 0"}]
        given = bridge.put(
            "/api/v1/line-breakpoints",
            {"path": script, "job": job.job_id, "breakpoints": rank0_only},
        )
        assert [w["breakpoints"][0]["verified"] for w in given["workers"]] == [True, True]

        async def stopped() -> bool:
            await asyncio.sleep(1)
            return 0 in {r for r, s in rank_states().items() if s == "paused"}

        await hold_rank0(stopped, 3 * STOP_TIMEOUT)
        bridge.put("/api/v1/line-breakpoints", {"path": script, "job": job.job_id,
                                                "breakpoints": []})  # fmt: skip
        bridge.post("/api/v1/continue", {"filter": {"job": job.job_id}})
        until(lambda: timeouts() == [STOP_TIMEOUT] * 2, 30, "their own timeouts back", bridge)

        # Rank 0's own breakpoint(), with a session following the job
        client = await dap_connect(bridge.dap_host, bridge.dap_port)
        await client.attach(follow={"job": job.job_id}, token=bridge.token)
        until(lambda: timeouts() == [3600] * 2, 15, "timeouts raised again", bridge)
        phase(state, "break")

        async def stopped_event() -> bool:
            with contextlib.suppress(asyncio.TimeoutError):
                await client.wait_event("stopped", timeout=1)
                return True
            return False

        await hold_rank0(stopped_event, STOPPED_FOR)
        phase(state, "end")
        bridge.post("/api/v1/continue", {"filter": {"job": job.job_id}})
        results = ast.literal_eval(job.result(timeout=60))
        await client.close()
    finally:
        stop_job(job)
    steps = {r["steps"] for r in results}
    assert len(steps) == 1 and {r["total"] for r in results} == {3.0 * steps.pop()}
    assert [r["longest"] > 3 * STOP_TIMEOUT for r in results] == [False, True]  # rank 1 waited

    # The plain breakpoint(): nobody attached before rank 0 stopped
    plain = tmp_path / "plain"
    plain.mkdir()
    job = start_job(hang_head.address, "stopped_rank.py",
                    env={"STATE_DIR": str(plain), "PLAN": "plain"})  # fmt: skip
    try:
        rank1 = ast.literal_eval(job.result(timeout=90))
    finally:
        stop_job(job)
    assert "failed_after" in rank1, rank1
    assert STOP_TIMEOUT - 1 < rank1["failed_after"] < STOP_TIMEOUT + 5, rank1
    assert "timed out" in rank1["error"].lower() or "timeout" in rank1["error"].lower(), rank1
    assert rank1["timeout_then"] == 3600  # raised once the stop was held: too late for it
