"""Capture points on a real Ray head: four live gloo ranks training, a capture point set from a
real DAP client and another over HTTP. Every rank is captured and runs on: no stop reaches the
client, the step counter keeps moving between captures, and the job's result is right."""

from __future__ import annotations

import ast
import asyncio
import itertools
from collections.abc import Callable
from typing import Any

import pytest

from raydap.bridge.client.local_ray import LocalRay
from tests.conftest import Connect
from tests.e2e.conftest import JOBS, BridgeProcess, Job, break_line
from tests.e2e.test_bridge import raydap
from tests.e2e.test_live import wait_workers
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e

SCRIPT = str(JOBS / "capture_ranks.py")
STEP = break_line("capture_ranks.py", "step")


def training(w: dict[str, Any]) -> bool:
    return w["state"] == "running" and w["live"] and w["task_name"] == "Rank.train"


def captures_of(bridge: BridgeProcess, point: str) -> list[dict[str, Any]]:
    return list(bridge.get(f"/api/v1/captures?point={point}")["captures"])


def local(capture: dict[str, Any], name: str) -> dict[str, Any]:
    return next(v for v in capture["frames"][0]["locals"] if v["name"] == name)


async def test_capture_points_record_every_rank_and_the_job_runs_on(
    ray_head: LocalRay, bridge: BridgeProcess, run_job: Callable[[str], Job], dap_connect: Connect
) -> None:
    job = run_job("capture_ranks.py")
    await asyncio.to_thread(wait_workers, bridge, job.job_id, training, 4)
    client = await dap_connect(bridge.dap_host, bridge.dap_port)
    await client.attach(follow={"job": job.job_id})

    answer = await client.request("setBreakpoints", {
        "source": {"path": SCRIPT}, "breakpoints": [{"line": STEP, "mode": "capture"}],
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
    assert (loss["shape"], loss["dtype"], loss["device"]) == ([1], "torch.float32", "cpu")
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

    # The same line through HTTP, for rank 2 only, at most three captures.
    asked = {"path": SCRIPT, "line": STEP, "rank": 2, "interval": 0.2, "most": 3}
    second = bridge.post("/api/v1/capture-points", asked)
    assert second["owner"].endswith("(HTTP)") and second["id"] != point["id"]

    def three() -> list[dict[str, Any]] | None:
        got = captures_of(bridge, second["id"])
        return got if len(got) >= 3 else None

    taken = await asyncio.to_thread(wait_until, three, timeout=20, what="three captures")
    await asyncio.sleep(1.0)  # time for a fourth, which "most" forbids
    assert len(captures_of(bridge, second["id"])) == 3 and {c["rank"] for c in taken} == {2}
    assert bridge.http_error("DELETE", f"/api/v1/capture-points/{point['id']}")[0] == 403
    bridge.delete(f"/api/v1/capture-points/{second['id']}")
    assert second["id"] not in {p["id"] for p in bridge.get("/api/v1/capture-points")["points"]}

    assert [e for e in client.events if e.event == "stopped"] == []
    result = await asyncio.to_thread(job.result, 90)
    ranks = ast.literal_eval(result)
    assert [r[0] for r in ranks] == [0, 1, 2, 3] and all(r[2] for r in ranks)
    assert len({r[1] for r in ranks}) == 1  # lockstep: every rank did every step
