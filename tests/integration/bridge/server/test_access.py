"""Tokens, roles, the audit log, TLS and connection limits of a real `raydap serve`.

The bridge holds a real debugpy process (bench/debuggee.py), listed by the fake dashboard of
bench/fake_cluster.py: access control is the bridge's own business, so no Ray is needed.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import ssl
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import aiohttp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raydap.bridge.client.dap_client import DapClient, DapRequestFailed
from tests.conftest import Connect
from tests.e2e.conftest import BridgeProcess, start_bridge, stop_bridge
from tests.integration.bridge.server.conftest import ALICE, BOB

ROOT = Path(__file__).resolve().parents[4]


def get(
    bridge: BridgeProcess,
    path: str,
    token: str | None,
    body: bytes | None = None,
    method: str | None = None,
) -> int:
    """The status of a request (a POST when it has a body, unless ``method`` says)."""
    method = method or ("POST" if body else "GET")
    request = urllib.request.Request(bridge.url + path, data=body, method=method)
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def record_id(bridge: BridgeProcess) -> str:
    request = urllib.request.Request(bridge.url + "/api/v1/breakpoints")
    request.add_header("Authorization", f"Bearer {BOB}")
    for _ in range(100):
        with urllib.request.urlopen(request, timeout=10) as answer:
            records = json.loads(answer.read())["breakpoints"]
        if records and records[0]["state"] == "paused":
            return str(records[0]["id"])
        import time

        time.sleep(0.1)
    raise AssertionError("the debuggee was not held")


def test_http_needs_a_token_and_view_tokens_only_look(secured: BridgeProcess) -> None:
    rid = record_id(secured)
    assert get(secured, "/healthz", None) == 200  # liveness probes need no secret
    assert get(secured, "/api/v1/breakpoints", None) == 401
    assert get(secured, "/api/v1/breakpoints", "not-a-token-at-all-xxxxxx") == 401
    assert get(secured, "/api/v1/breakpoints", BOB) == 200
    assert get(secured, f"/api/v1/breakpoints/{rid}/continue", BOB, b"{}") == 403
    assert get(secured, "/api/v1/evaluate", BOB, b'{"expression": "1"}') == 403
    # Rank sets: a view token looks through one, and sets no breakpoint on one
    assert get(secured, "/api/v1/workers?ranks=tp%3D1%20dp%3D0", BOB) == 200
    assert get(secured, "/api/v1/workers?ranks=tp%3D(1", BOB) == 400
    ranked = b'{"path": "/a.py", "job": "01", "ranks": "tp=1", "breakpoints": [{"line": 3}]}'
    assert get(secured, "/api/v1/line-breakpoints", BOB, ranked, "PUT") == 403
    bob = {"name": "bob", "role": "view", "runs_code": False}
    alice = {"name": "alice", "role": "debug", "runs_code": True}
    for secret, who in ((BOB, bob), (ALICE, alice)):
        request = urllib.request.Request(secured.url + "/api/v1/me")
        request.add_header("Authorization", f"Bearer {secret}")
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert json.loads(answer.read()) == who  # what the page disables by


async def test_dap_attach_checks_the_token_before_anything_reaches_a_worker(
    secured: BridgeProcess, dap_connect: Connect
) -> None:
    rid = record_id(secured)
    client = await dap_connect(secured.dap_host, secured.dap_port)
    await client.request("initialize", {"adapterID": "test"})
    missing = await client.request("attach", {"breakpoint": rid}, check=False)
    assert not missing.success and '"token"' in (missing.message or "")
    wrong = await client.request("attach", {"breakpoint": rid, "token": "x" * 20}, check=False)
    assert not wrong.success and "not one this bridge knows" in (wrong.message or "")

    viewer = await dap_connect(secured.dap_host, secured.dap_port)
    await viewer.attach(breakpoint=rid, token=BOB)
    thread_id = (await viewer.wait_event("stopped")).body["threadId"]
    frames = (await viewer.request("stackTrace", {"threadId": thread_id})).body["stackFrames"]
    scopes = await viewer.request("scopes", {"frameId": frames[0]["id"]})
    assert scopes.success  # looking is allowed
    for command, arguments in (
        ("evaluate", {"expression": "payload", "frameId": frames[0]["id"]}),
        ("continue", {"threadId": thread_id}),
        ("setBreakpoints", {"source": {"path": "x.py"}, "breakpoints": [{"line": 1}]}),
    ):
        with pytest.raises(DapRequestFailed, match="'bob' may only look"):
            await viewer.request(command, arguments)

    debugger = await dap_connect(secured.dap_host, secured.dap_port)
    await debugger.attach(breakpoint=rid, token=ALICE)
    await debugger.wait_event("stopped")
    frames = (await debugger.request("stackTrace", {"threadId": thread_id})).body["stackFrames"]
    answer = await debugger.request(
        "evaluate", {"expression": "payload['rank']", "frameId": frames[0]["id"], "context": "repl"}
    )
    assert answer.body["result"] == "3"


def test_the_audit_log_names_who_did_what_and_never_a_secret(secured: BridgeProcess) -> None:
    audit = secured.log.with_name("audit.jsonl")
    text = audit.read_text()
    assert ALICE not in text and BOB not in text
    entries = [json.loads(line) for line in text.splitlines()]
    assert {(e["action"], e["token"]) for e in entries} >= {
        ("attach", "bob"), ("attach", "alice"), ("evaluate", "alice"),
    }  # fmt: skip
    evaluate = next(e for e in entries if e["action"] == "evaluate")
    assert evaluate["expression"] == "payload['rank']" and evaluate["worker"]
    assert evaluate["client"].startswith("127.0.0.1")


async def test_websocket_dap_needs_a_bearer_token(
    secured: BridgeProcess, dap_connect: Connect
) -> None:
    url = secured.url.replace("http://", "ws://") + f"/dap?breakpoint={record_id(secured)}"
    async with aiohttp.ClientSession() as http:
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await http.ws_connect(url)
        assert refused.value.status == 401
        async with http.ws_connect(url, headers={"Authorization": f"Bearer {BOB}"}) as ok:
            assert not ok.closed


async def test_silent_connections_are_closed_and_connections_are_capped(
    secured: BridgeProcess,
) -> None:
    reader, writer = await asyncio.open_connection(secured.dap_host, secured.dap_port)
    said = await asyncio.wait_for(reader.read(), 5)  # no attach within 1 s: told, then closed
    assert b"it did not attach within 1 s" in said and said.endswith(b'"type":"event"}')
    assert b'"event":"terminated"' in said
    writer.close()

    held = [await asyncio.open_connection(secured.dap_host, secured.dap_port) for _ in range(6)]
    reader, writer = await asyncio.open_connection(secured.dap_host, secured.dap_port)
    assert await asyncio.wait_for(reader.read(), 2) == b""  # the seventh is refused at once
    writer.close()
    for _, w in held:
        w.close()


def test_serve_refuses_unsafe_or_broken_setups(tmp_path: Path, dashboard: str) -> None:
    def serve(*args: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k != "RAYDAP_TOKEN"}
        return subprocess.run(
            [sys.executable, "-m", "raydap.bridge", "serve", "--dashboard-url", dashboard, *args],
            capture_output=True, text=True, timeout=30, env=env,
        )  # fmt: skip

    exposed = serve("--host", "0.0.0.0", "--no-token")
    assert exposed.returncode == 2 and "without a token" in exposed.stderr
    bad = tmp_path / "tokens"
    bad.write_text("carol admin secret-secret-secret\n")
    broken = serve("--token-file", str(bad))
    assert broken.returncode == 2 and f"{bad}:1: role must be debug or view" in broken.stderr
    bad.write_text("carol debug short\n")
    short = serve("--token-file", str(bad))
    assert (
        short.returncode == 2
        and "shorter than 16" in short.stderr
        and "short\n" not in short.stderr
    )


async def test_tls_for_http_and_dap(empty_dashboard: str, tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    args = ["--dashboard-url", empty_dashboard, "--tls-cert", str(cert), "--tls-key", str(key)]
    bridge = start_bridge(args, tmp_path / "bridge.log")
    try:
        assert bridge.url.startswith("https://")
        url = bridge.url
        context = ssl.create_default_context(cafile=str(cert))
        with urllib.request.urlopen(url + "/healthz", timeout=10, context=context) as answer:
            assert json.loads(answer.read())["status"] in ("ok", "degraded")
        client = await DapClient.connect(bridge.dap_host, bridge.dap_port, ssl=context)
        answer = await client.request("initialize", {"adapterID": "tls"})
        assert answer.success
        await client.close()
        with pytest.raises(ssl.SSLError):  # plain TLS without trusting the certificate
            await DapClient.connect(
                bridge.dap_host, bridge.dap_port, ssl=ssl.create_default_context()
            )
    finally:
        stop_bridge(bridge)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    method=st.sampled_from(["GET", "POST", "PUT", "DELETE"]),
    path=st.sampled_from(
        [
            "/api/v1/breakpoints",
            "/api/v1/continue",
            "/api/v1/evaluate",
            "/api/v1/snapshot",
            "/api/v1/breakpoints/",
            "/nope",
        ]
    )
    | st.text(alphabet="/abcdefghijklmnopqrstuvwxyz0123456789%._-?=&", max_size=40).map(
        lambda text: "/" + text
    ),
    body=st.one_of(st.none(), st.binary(max_size=200), st.text(max_size=200).map(str.encode)),
)
def test_random_http_requests_get_client_errors_not_crashes(
    secured: BridgeProcess, method: str, path: str, body: bytes | None
) -> None:
    request = urllib.request.Request(secured.url + path, data=body, method=method)
    request.add_header("Authorization", f"Bearer {ALICE}")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            status = int(answer.status)
    except urllib.error.HTTPError as exc:
        status = int(exc.code)
        if status != 404 and status != 405:
            assert "error" in json.loads(exc.read()), (method, path, body)
    assert status < 500, (method, path, body)
    assert get(secured, "/healthz", None) == 200  # and the bridge still answers


#: The GET routes that read query parameters, and the names they read.
QUERIED = {
    "/api/v1/captures": ["job", "rank", "point", "kind"],
    "/api/v1/stacks": ["job", "task", "actor", "node", "locals", "native", "all_threads",
                       "all_frames"],
    "/api/v1/capture-points/cp-0000000000/show": ["expression"],
    "/api/v1/hangs": ["job"],
    "/api/v1/workers": ["job"],
}  # fmt: skip


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    route=st.sampled_from(sorted(QUERIED)),
    pairs=st.lists(
        st.tuples(
            st.sampled_from(sorted({n for names in QUERIED.values() for n in names} | {"x"})),
            st.one_of(st.text(max_size=30), st.sampled_from(["²", "-1", "1e9", "9" * 40, "0"])),
        ),
        max_size=4,
    ),
)
def test_any_query_parameters_get_an_answer_never_a_server_error(
    secured: BridgeProcess, route: str, pairs: list[tuple[str, str]]
) -> None:
    """Found on main: ``GET /api/v1/captures?rank=²`` answered 500 (``"²".isdigit()``)."""
    assert get(secured, "/api/v1/captures?rank=%C2%B2", BOB) == 400
    query = urllib.parse.urlencode(pairs)
    status = get(secured, f"{route}?{query}", BOB)
    assert status < 500, (route, pairs)
    assert status in (200, 400, 404), (route, pairs, status)


def test_the_legacy_pdb_relay_needs_a_debug_token_and_a_legacy_breakpoint(
    secured: BridgeProcess,
) -> None:
    """It runs whatever is typed: like evaluate, a view token may not; and it reaches only
    sockets the bridge lists as legacy pdb breakpoints."""
    rid = record_id(secured)
    assert get(secured, f"/pdb?breakpoint={rid}", None) == 401
    assert get(secured, f"/pdb?breakpoint={rid}", BOB) == 403
    assert get(secured, f"/pdb?breakpoint={rid}", ALICE) == 400  # a debugpy worker
    assert get(secured, "/pdb?breakpoint=pdb-00000000", ALICE) == 404


async def test_a_view_token_sees_the_worker_view_with_everything_that_runs_code_disabled(
    secured: BridgeProcess, browser: object
) -> None:
    """In the page, bob (view) reads the paused worker's source, stack and locals; its controls
    and console are disabled, and what the page would send is refused by the bridge."""
    from playwright.async_api import Browser, expect

    assert isinstance(browser, Browser)
    rid = record_id(secured)
    page = await browser.new_page()
    await page.goto(f"{secured.url}/?token={BOB}")
    await page.get_by_role("button", name=re.compile(rf"^Open .* {rid}$")).click()
    payload = page.get_by_role("tree", name="Variables").locator('[data-name="payload"]')
    await expect(payload).to_be_visible(timeout=20_000)
    # debugpy.breakpoint() stops at the line after it
    await expect(page.locator("#worker-source [aria-current]")).to_contain_text("time.sleep(0.05)")
    for name in ("Continue", "Pause", "Step over", "Step in", "Step out", "Evaluate"):
        await expect(page.get_by_role("button", name=name, exact=True)).to_be_disabled()
    await expect(page.get_by_label("Console", exact=True)).to_be_disabled()
    refused = await page.evaluate(
        """async (id) => [
            (await fetch('/api/v1/evaluate', {method: 'POST', headers: {'Content-Type':
              'application/json'}, body: JSON.stringify({expression: '1'})})).status,
            (await fetch(`/api/v1/breakpoints/${id}/continue`, {method: 'POST', headers:
              {'Content-Type': 'application/json'}, body: '{}'})).status]""",
        rid,
    )
    assert refused == [403, 403]
    await page.close()
    assert record_id(secured) == rid  # still paused
