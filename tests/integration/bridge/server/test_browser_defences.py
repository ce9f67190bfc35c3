"""A bridge on default settings against what a web page in the developer's browser can send.

Each attack asks the held worker to write a marker file; after all of them the file must not
exist, and the same request sent the way raydap's own clients send it must create it (so the
check could fail).
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import stat
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from raydap.bridge.server import connection_file
from tests.conftest import runtime_dir
from tests.e2e.conftest import BridgeProcess, start_bridge, stop_bridge
from tests.waiting import wait_until

CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
EVIL_PAGE = Path(__file__).with_name("evil_page.html")


@pytest.fixture(scope="module")
def bridge(dashboard: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BridgeProcess]:
    home = tmp_path_factory.mktemp("defaults")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAYDAP_TOKEN")}
    running = start_bridge(["--dashboard-url", dashboard], home / "bridge.log", env)
    wait_until(
        lambda: [r for r in running.records() if r["state"] == "paused"],
        what="a paused worker listed",
        context=running.log.read_text,
    )
    yield running
    stop_bridge(running)


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "marker"


def evaluate_body(marker: Path) -> bytes:
    return json.dumps({"expression": f"open({str(marker)!r}, 'w').write('ran')"}).encode()


def send(
    bridge: BridgeProcess, method: str, path: str, headers: dict[str, str], body: bytes = b""
) -> int:
    """One raw HTTP request (``Host`` and ``Origin`` exactly as given); its status."""
    host, port = bridge.url.removeprefix("http://").rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        connection.request(method, path, body=body or None, headers=headers)
        return connection.getresponse().status
    finally:
        connection.close()


def test_a_token_is_made_and_written_for_this_user_only(bridge: BridgeProcess) -> None:
    written = runtime_dir() / f"bridge-{bridge.process.pid}.json"
    assert stat.S_IMODE(written.stat().st_mode) == 0o600
    assert stat.S_IMODE(written.parent.stat().st_mode) == 0o700
    connection = connection_file.Connection.model_validate_json(written.read_text())
    assert connection.url == bridge.url and connection.dap_port == bridge.dap_port
    assert connection.token and len(connection.token) >= 32 and connection.token == bridge.token
    assert send(bridge, "GET", "/api/v1/breakpoints", {}) == 401  # loopback needs it too


def test_what_a_web_page_can_send_is_refused_with_or_without_the_token(
    bridge: BridgeProcess, marker: Path
) -> None:
    port = bridge.url.rsplit(":", 1)[1]
    code = evaluate_body(marker)
    for auth in ({}, bridge.auth):
        attacks = [
            # No CORS preflight for text/plain: any page can send this.
            ({"Content-Type": "text/plain", "Origin": "http://evil.example"}, 403),
            ({"Content-Type": "application/json", "Origin": "http://evil.example"}, 403),
            ({"Content-Type": "application/json", "Origin": "null"}, 403),
            ({"Content-Type": "application/json", "Origin": "http://127.0.0.1:9"}, 403),
            # DNS rebinding: the page's own origin, on a name that now points at us.
            (
                {
                    "Content-Type": "application/json",
                    "Host": f"attacker.example:{port}",
                    "Origin": f"http://attacker.example:{port}",
                },
                403,
            ),
            ({"Content-Type": "application/json", "Host": f"attacker.example:{port}"}, 403),
            ({"Content-Type": "text/plain"}, 415),
            ({"Content-Type": "application/x-www-form-urlencoded"}, 415),
        ]
        for headers, refused in attacks:
            status = send(bridge, "POST", "/api/v1/evaluate", {**headers, **auth}, code)
            assert status == refused, (headers, auth.keys(), status)
        rebound = {"Host": f"attacker.example:{port}", **auth}
        assert send(bridge, "GET", "/api/v1/breakpoints", rebound) == 403
    assert not marker.exists()

    # The same request as raydap's own clients send it runs.
    assert send(bridge, "POST", "/api/v1/evaluate",
                {"Content-Type": "application/json", **bridge.auth}, code) == 200  # fmt: skip
    assert marker.read_text() == "ran"


async def test_cross_site_websockets_are_refused(bridge: BridgeProcess, marker: Path) -> None:
    base = bridge.url.replace("http://", "ws://")
    async with aiohttp.ClientSession() as http:
        for path in ("/dap", "/api/v1/events"):
            for auth in ({}, bridge.auth):
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                    await http.ws_connect(base + path, origin="http://evil.example", headers=auth)
                assert refused.value.status == 403
        async with http.ws_connect(base + "/api/v1/events", headers=bridge.auth) as feed:
            assert (await feed.receive_json(timeout=10))["kind"] == "snapshot"


def test_the_cli_finds_the_bridge_and_its_token_in_the_connection_file(
    bridge: BridgeProcess, marker: Path, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAYDAP_TOKEN")}
    env["RAYDAP_URL"] = bridge.url

    def raydap(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "raydap.bridge", *args],
                              capture_output=True, text=True, timeout=60,
                              env={**env, **extra})  # fmt: skip

    listed = raydap("list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [r["state"] for r in json.loads(listed.stdout)] == ["paused"]
    # A stale file of a bridge that is gone is ignored; so is one for another URL.
    stale = connection_file.Connection(url="http://127.0.0.1:1", dap_port=2, token="x", pid=2**22)
    written = connection_file.write(runtime_dir(), stale)
    try:
        assert raydap("list").returncode == 0
        assert stale not in connection_file.live_connections(runtime_dir())
    finally:
        written.unlink()
    wrong = raydap("list", RAYDAP_RUNTIME_DIR=str(tmp_path / "empty"))
    assert wrong.returncode == 1 and "HTTP 401" in wrong.stderr


@pytest.fixture
async def evil_page(marker: Path) -> AsyncIterator[str]:
    """A page on another local port that tries everything a page can against the bridge."""
    page = EVIL_PAGE.read_text().replace("MARKER", repr(str(marker)))

    async def serve(request: web.Request) -> web.Response:
        return web.Response(text=page, content_type="text/html")

    app = web.Application()
    app.router.add_get("/", serve)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}/"
    await runner.cleanup()


async def test_a_real_page_on_another_local_port_gets_nothing(
    bridge: BridgeProcess, evil_page: str, marker: Path
) -> None:
    if not CHROMIUM.exists():
        if os.environ.get("RAYDAP_REQUIRE_EDITOR_TESTS"):
            pytest.fail(f"no Chromium at {CHROMIUM} (make e2e-tools installs it)")
        pytest.skip(f"no Chromium at {CHROMIUM}")
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"],
        )  # fmt: skip
        try:
            page = await browser.new_page()
            # Logged in to the bridge first: its cookie is same-site for 127.0.0.1:other.
            await page.goto(f"{bridge.url}/?token={bridge.token}")
            assert page.url == bridge.url + "/"  # the token left the address bar
            cookies = await page.context.cookies()
            assert [(c["name"], c["httpOnly"], c["sameSite"]) for c in cookies] == [
                ("raydap-token", True, "Strict")
            ]
            await page.goto(f"{evil_page}?bridge={bridge.url}")
            await page.wait_for_function("document.title === 'done'", timeout=20_000)
            results = json.loads(await page.text_content("body") or "{}")
        finally:
            await browser.close()
    assert results["dap_socket"] == "failed" and results["events_socket"] == "failed", results
    for name in ("post_text", "post_json", "read_list"):
        assert results[name].startswith("failed"), results  # no readable answer
    await asyncio.sleep(0.5)  # nothing happens: no code the page sent runs late either
    assert not marker.exists(), results


def test_the_connection_file_goes_when_the_bridge_stops(
    empty_dashboard: str, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAYDAP_TOKEN")}
    running = start_bridge(["--dashboard-url", empty_dashboard], tmp_path / "bridge.log", env)
    written = runtime_dir() / f"bridge-{running.process.pid}.json"
    assert written.exists()
    stop_bridge(running)
    assert not written.exists()


@pytest.mark.parametrize(
    ("path", "status"),
    [("/", 200), ("/static/page.js", 200), ("/api/v1/breakpoints", 401), ("/static/none.js", 404)],
)
def test_every_answer_tells_browsers_to_run_only_the_bridges_own_scripts_unframed(
    bridge: BridgeProcess, path: str, status: int
) -> None:
    """The page, its files, a refusal and a miss alike: a strict Content-Security-Policy (no
    inline script, no eval, no framing), no sniffing, no referrer."""
    host, port = bridge.url.removeprefix("http://").rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        connection.request("GET", path)
        answer = connection.getresponse()
        answer.read()
    finally:
        connection.close()
    assert answer.status == status
    policy = {
        directive.split()[0]: directive.split()[1:]
        for directive in answer.headers["Content-Security-Policy"].split("; ")
    }
    assert policy["default-src"] == ["'none'"] and policy["script-src"] == ["'self'"]
    assert policy["frame-ancestors"] == ["'none'"]
    assert not any("unsafe" in source for sources in policy.values() for source in sources)
    assert answer.headers["X-Content-Type-Options"] == "nosniff"
    assert answer.headers["Referrer-Policy"] == "no-referrer"
