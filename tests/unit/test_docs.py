"""What the README and docs/ tell a person is what the code does: every `raydap` command and
flag they show is one the CLI takes, every route one the bridge serves, every MCP tool one the
agents are offered (with the arguments and roles said), every `RAYDAP_*` variable one something
reads, the `raydap list` header the one it prints, and every link a file in the repository."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from raydap.bridge.client.cli import build_parser
from raydap.bridge.client.connection import ClientSettings
from raydap.bridge.client.render import HEADERS
from raydap.bridge.cluster.locate import Cluster
from raydap.bridge.mcp import catalog
from raydap.bridge.server.bridge import Bridge
from raydap.bridge.server.browser import BrowserGuard
from raydap.bridge.server.http_api import Services, make_app
from raydap.bridge.server.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
PAGES = [
    ROOT / "README.md",
    ROOT / "vscode-ext" / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
]
SOURCES = [
    p for folder in ("bridge", "adapter", "live", "protocol") for p in (ROOT / folder).rglob("*.py")
]


def page_id(path: Path) -> str:
    return str(path.relative_to(ROOT))


def code_of(text: str) -> list[str]:
    """The code a page shows: each line of a fenced block, and each inline code span."""
    found: list[str] = []
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            found.append(line)
        else:
            found.extend(re.findall(r"`([^`]+)`", line))
    return found


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    [action] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def options(parser: argparse.ArgumentParser) -> set[str]:
    return {flag for action in parser._actions for flag in action.option_strings}


#: `raydap WORD ...` where a command starts (a line, a prompt, a path, `ssh HOST`, `--`), up to a
#: comment or the end; not a name in prose (`no raydap bridge at ...`, a prompt's `(raydap
#: scale pid 1)`, an MCP server named raydap before its URL).
COMMAND = re.compile(
    r"(?:^|\$ |/|ssh \w+ |-- |&& )raydap (?P<command>[a-z]+)\b(?![:.])(?P<rest>[^#\n]*)"
)


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_command_and_flag_shown_is_one_the_cli_takes(page: Path) -> None:
    commands = subcommands()
    wrong = []
    for code in code_of(page.read_text()):
        for found in COMMAND.finditer(code):
            name, rest = found["command"], found["rest"]
            if name not in commands:
                wrong.append(f"raydap {name}")
                continue
            for flag in re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", rest):
                if flag not in options(commands[name]):
                    wrong.append(f"raydap {name} {flag}")
    assert not wrong, f"{page_id(page)} shows what the CLI does not take: {wrong}"


@pytest.fixture
async def app() -> web.Application:
    """The bridge's real application (routes of the HTTP API, the page, /mcp), not started."""
    bridge = Bridge(Settings(), Cluster("http://127.0.0.1:9"))
    services = Services(
        workers=bridge.workers, status=bridge.status, capabilities=bridge.capabilities,
        auth=bridge.auth, audit=bridge.audit, limiter=bridge.limiter, metrics=bridge.metrics,
        mcp=bridge.mcp,
    )  # fmt: skip
    return make_app(services, BrowserGuard("127.0.0.1", [], []))


#: A method and a path, whole (`POST /api/v1/...` in prose names no route).
ROUTE = re.compile(r"\b(GET|POST|DELETE|PUT) (/[^\s`|,)]*)(?=[\s`|,)]|$)")
#: Routes the docs name to say the bridge refuses them, with what it answers.
REFUSED = {("GET", "/mcp"): 405}  # docs/architecture.md: MCP without streams


async def test_every_route_shown_is_one_the_bridge_serves(app: web.Application) -> None:
    shown = {
        (method, path.rstrip("."))
        for page in PAGES
        for method, path in ROUTE.findall(page.read_text())
        if "..." not in path
    }
    assert ("GET", "/api/v1/breakpoints") in shown  # the pattern finds them
    missing = []
    for method, path in sorted(shown):
        concrete = re.sub(r"\{[^}]+\}", "x", path).split("?")[0]
        match = await app.router.resolve(make_mocked_request(method, concrete, app=app))
        refused = match.http_exception.status if match.http_exception is not None else None
        if refused != REFUSED.get((method, path)):
            missing.append(f"{method} {path}")
    assert not missing, f"the docs show routes the bridge does not serve: {missing}"


#: Served, but not a route a person calls: the page's own files.
NOT_ROUTES = {("GET", "/static")}


async def test_every_route_the_bridge_serves_is_in_the_api_page(app: web.Application) -> None:
    """docs/api.md lists every route: what the app serves is what it lists (one it left
    out was PUT /api/v1/line-breakpoints)."""
    listed = (ROOT / "docs" / "api.md").read_text()
    shown = {(m, p.rstrip(".")) for m, p in ROUTE.findall(listed)}
    shown |= {("POST", "/api/v1/" + word) for word in re.findall(r"/ `(\w+)`", listed)}
    missing = []
    for route in app.router.routes():
        info = route.resource.get_info() if route.resource is not None else {}
        path = str(info.get("path") or info.get("formatter") or info.get("prefix"))
        path = path.replace("{archive}", ".tar.gz")
        served = (route.method, path)
        if route.method == "HEAD" or served in NOT_ROUTES or served in shown:
            continue
        if path.endswith(".tar.gz") and "report.tar.gz" in listed:
            continue
        missing.append(f"{route.method} {path}")
    assert not missing, f"docs/api.md leaves out routes the bridge serves: {missing}"


def mcp_tools_table() -> dict[str, tuple[set[str], bool]]:
    """docs/mcp.md's tools: name -> (arguments shown, offered to a view token)."""
    text = (ROOT / "docs" / "mcp.md").read_text()
    section = text.split("## Tools", 1)[1].split("\n## ", 1)[0]
    tools = {}
    for row in re.findall(r"^\| `(\w+)\(([^)]*)\)` \| (yes|no) \|", section, re.MULTILINE):
        name, arguments, view = row
        shown = {a.strip() for a in re.split(r"[,|\\]", arguments) if a.strip()}
        tools[name] = (shown, view == "yes")
    return tools


def test_the_mcp_tools_documented_are_the_ones_offered() -> None:
    documented = mcp_tools_table()
    offered = {tool.name: tool for tool in catalog.TOOLS}
    assert documented.keys() == offered.keys()
    for name, (arguments, for_view) in documented.items():
        tool = offered[name]
        fields = set(tool.arguments.model_fields)
        assert arguments <= fields, f"{name}: docs show {arguments - fields}, not arguments"
        assert for_view == tool.reads, f"{name}: docs say view={for_view}, it reads={tool.reads}"
    reading = sum(1 for tool in catalog.TOOLS if tool.reads)
    words = {5: "five", 6: "six", 7: "seven", 8: "eight"}
    text = (ROOT / "docs" / "mcp.md").read_text()
    counted = re.findall(
        r"\b(one|two|three|four|five|six|seven|eight|nine|ten) reading tools", text
    )
    assert counted and set(counted) == {words[reading]}, counted


def variables_read() -> set[str]:
    """The bridge's settings and its clients' (each field is RAYDAP_ and its name), and any
    other name the code reads."""
    fields = [*Settings.model_fields, *ClientSettings.model_fields]
    named = {f"RAYDAP_{name.upper()}" for name in fields}
    for path in SOURCES:
        named |= set(re.findall(r"RAYDAP_[A-Z_]+[A-Z]", path.read_text()))
    return named


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_variable_shown_is_one_raydap_reads(page: Path) -> None:
    shown = set(re.findall(r"RAYDAP_[A-Z_]+[A-Z]", page.read_text()))
    unknown = shown - variables_read() - {"RAYDAP_REQUIRE_EDITOR_TESTS", "RAYDAP_SCREENSHOTS"}
    assert not unknown, f"{page_id(page)} names variables nothing reads: {sorted(unknown)}"


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_the_list_header_shown_is_the_one_printed(page: Path) -> None:
    for line in page.read_text().splitlines():
        words = re.findall(r"\b[A-Z]{2,}\b", line)
        if words[:2] == ["ID", "KIND"]:
            assert words == list(HEADERS), f"{page_id(page)}: {line.strip()}"


LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_link_is_a_file_in_the_repository(page: Path) -> None:
    broken = [
        target
        for target in LINK.findall(page.read_text())
        if not target.startswith(("http://", "https://", "mailto:"))
        and not (page.parent / target).exists()
    ]
    assert not broken, f"{page_id(page)} links to files that are not here: {broken}"


def test_the_readme_is_short_and_names_no_file_outside_the_repository() -> None:
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 160
    assert "DESIGN.md" not in text and "../shared" not in text
    for page in PAGES:
        assert "DESIGN.md" not in page.read_text(), page_id(page)


def _settings_flags() -> set[str]:
    return {"--" + name.replace("_", "-") for name in Settings.model_fields}


def test_every_serve_setting_is_a_flag_and_a_variable_but_replace() -> None:
    """docs/cluster.md: every `raydap serve` setting is a flag and a variable, but --replace."""
    serve = options(subcommands()["serve"]) - {"-h", "--help"}
    settings: dict[str, Any] = {f for f in _settings_flags() if f != "--token"}
    assert serve - settings == {"--replace"}


def test_the_settings_page_is_the_settings_model() -> None:
    """docs/settings.md is made from the model: after a setting changes, make it again."""
    from raydap.bridge.server import settings_reference

    assert (ROOT / "docs" / "settings.md").read_text() == settings_reference.render(), (
        "run: python -m raydap.bridge.server.settings_reference > docs/settings.md"
    )


#: A default a page gives for a flag of `raydap serve`: "`--flag N` (the default)",
#: "--flag ... (default N" and "--flag` is off by default".
DEFAULT_SAID = [
    re.compile(r"--(?P<flag>[a-z-]+)[` ]+(?P<value>[\w.$/]+)`?,? (?:\()?the default"),
    re.compile(r"--(?P<flag>[a-z-]+)`?[^.;()]{0,60}\(default `?(?P<value>[\w.$/]+)"),
    re.compile(r"--(?P<flag>[a-z-]+)`? is (?P<value>off) by default"),
]


def _as_default(value: str) -> object:
    if value == "off":
        return None
    try:
        return float(value)
    except ValueError:
        return value


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_each_serve_default_a_page_gives_is_the_models(page: Path) -> None:
    fields = {"--" + name.replace("_", "-"): field for name, field in Settings.model_fields.items()}
    wrong = []
    for pattern in DEFAULT_SAID:
        for found in pattern.finditer(page.read_text()):
            field = fields.get("--" + found["flag"])
            if field is None:
                continue
            said, default = _as_default(found["value"]), field.default
            if isinstance(said, str) and said.startswith("$"):
                continue  # a path made at start: docs/settings.md words it
            model = None if default is False else default
            if said != (float(model) if isinstance(model, int | float) else model):
                wrong.append(f"--{found['flag']}: says {found['value']}, the model {default!r}")
    assert not wrong, f"{page_id(page)}: {wrong}"
