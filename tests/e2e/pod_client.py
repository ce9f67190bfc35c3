"""A person's client in a pod of its own, reaching the bridge only through the Service's
address (tests/e2e/test_kuberay.py runs it there): ``python pod_client.py JSON``, printing
what it saw as one JSON line. It only does what a person does; the test judges.

JSON: ``service`` (address), ``host`` (the Service's DNS name, sent as ``Host``), ``token``,
``live_job`` and ``hung_job`` (job ids), ``script`` and ``loop`` (the live job's file and the
line of its loop, where the editor breakpoint goes).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import urllib.error
import urllib.request
from typing import Any

from raydap.bridge.client.dap_client import DapClient

given: dict[str, Any] = json.loads(sys.argv[1])
BASE = f"http://{given['service']}:7800"


def call(path: str, body: dict[str, Any] | None = None, host: str | None = None) -> Any:
    request = urllib.request.Request(
        BASE + path, data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {given['token']}", "Host": host or given["host"],
                 "Content-Type": "application/json"},
    )  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return {"status": exc.code, "error": json.loads(exc.read()).get("error")}


def until(what: str, check: Any, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.3)
    raise SystemExit(f"pod client: no {what} within {timeout:g} s")


def workers(job: str) -> list[dict[str, Any]]:
    return [w for w in call("/api/v1/workers")["workers"] if w["job_id"] == job]


async def debug_live_job(seen: dict[str, Any]) -> None:
    job = given["live_job"]
    ranks = until("live ranks", lambda: (w := workers(job)) and len(w) == 2 and w)
    seen["live_ranks"] = [{k: r[k] for k in ("state", "live", "node_ip")} for r in ranks]
    # Merged stacks of the running ranks (read in the ranks themselves)
    stacks = call(f"/api/v1/stacks?job={job}")
    seen["live_stacks"] = {
        "workers": len(stacks["workers"]),
        "failed": stacks["failed"],
        "functions": sorted({n["function"] for n in nodes(stacks["tree"])}),
    }
    # Pause from outside, then an editor breakpoint on the loop, over the DAP port
    paused = call(f"/api/v1/workers/{ranks[0]['id']}/pause", {})
    seen["paused"] = (paused.get("paused") or {}).get("location") or paused
    call("/api/v1/continue", {"filter": {"job": job}})
    client = await DapClient.connect(given["service"], 7801)
    await client.attach(follow={"job": job}, token=given["token"])
    answer = await client.request(
        "setBreakpoints",
        {"source": {"path": given["script"]}, "breakpoints": [{"line": given["loop"]}]},
    )
    seen["verified"] = [b["verified"] for b in answer.body["breakpoints"]]
    stops = [(await client.wait_event("stopped", timeout=30)).body for _ in ranks]
    seen["stops"] = [s["reason"] for s in stops]

    def both_listed() -> list[dict[str, Any]] | None:
        found = [b for b in call("/api/v1/breakpoints")["breakpoints"]
                 if b["job_id"] == job and b.get("location")]  # fmt: skip
        return found if len(found) == 2 else None

    listed = until("both ranks listed as paused, with where", both_listed)
    seen["listed_lines"] = sorted(b["location"]["line"] for b in listed)
    await client.request("setBreakpoints", {"source": {"path": given["script"]}, "breakpoints": []})
    call("/api/v1/evaluate", {"expression": "setattr(self, 'finish', 5)",
                              "filter": {"job": job}})  # fmt: skip
    await client.request("raydapContinueAll", {})
    await client.close()


def hung_job(seen: dict[str, Any]) -> None:
    job = given["hung_job"]
    seen["watch"] = call("/api/v1/hangs/watch", {"job": job})

    def three() -> Any:
        found = call(f"/api/v1/stacks?job={job}")
        return found if len(found.get("workers", [])) == 3 else None

    stacks = until("stacks of the hung job's 3 ranks", three, timeout=90)
    seen["hung_stacks"] = sorted({n["function"] for n in nodes(stacks["tree"])})
    verdict = until("a hang verdict", lambda: next(
        (j for j in call("/api/v1/hangs")["jobs"] if j["job"] == job
         and j["state"] == "suspected_hang"), None), timeout=60)  # fmt: skip
    seen["verdict"] = {"state": verdict["state"], "why": verdict.get("why")}


def nodes(tree: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for child in tree.get("children", []):
        found += [child, *nodes(child)]
    return found


def ready() -> Any:
    """What the readiness probe asks: a Service sends nothing to a pod before it answers."""
    try:
        return call("/healthz")
    except OSError:
        return None


def main() -> None:
    seen: dict[str, Any] = {"healthz": until("the bridge ready", ready)}
    seen["other_names"] = {
        name: call("/api/v1/workers", host=name).get("status", 200)
        for name in ("raydap", "raydap.elsewhere.svc", "evil.example")
    }
    asyncio.run(debug_live_job(seen))
    hung_job(seen)
    seen["driver"] = call("/healthz").get("ray_driver")
    print(json.dumps(seen), flush=True)


main()
