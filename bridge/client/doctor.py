"""``raydap doctor``: a check list, each finding with what to do about it; exit status 1 when
any check fails. It looks at the bridge (reachable, token accepted, version), at Ray (address,
dashboard, Ray's own auth), and at what workers actually see on every alive node, learned by a
small probe task pinned to each (``RAY_DEBUG=legacy`` hides every breakpoint from DAP clients:
the most common setup mistake)."""

from __future__ import annotations

import importlib.metadata
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, Literal

from raydap.bridge.client.api_client import ApiClient, BridgeUnavailable
from raydap.bridge.cluster import ptrace_check, ray_auth
from raydap.bridge.cluster.locate import ClusterNotFound, locate

Level = Literal["ok", "warn", "FAIL"]


@dataclass(frozen=True)
class Finding:
    level: Level
    what: str
    fix: str = ""

    def __str__(self) -> str:
        return f"[{self.level:>4}] {self.what}" + (f"\n       -> {self.fix}" if self.fix else "")


def check_bridge(api: ApiClient) -> list[Finding]:
    try:
        health = api.get("/healthz")
    except BridgeUnavailable as exc:
        return [
            Finding("FAIL", str(exc), "start `raydap serve` on the Ray head, or set RAYDAP_URL")
        ]
    mine = importlib.metadata.version("raydap")
    version = health.get("version", "?")
    findings = [Finding("ok", f"bridge at {api.url} answers (raydap {version})")]
    if version != mine:
        findings.append(Finding("warn", f"the bridge runs raydap {version}, this client {mine}",
                                "install the same raydap on both"))  # fmt: skip
    if health.get("status") != "ok":
        findings.append(Finding("FAIL", f"the bridge is degraded: {health.get('reason')}",
                                "see the reason; discovery retries by itself"))  # fmt: skip
    driver = health.get("ray_driver") or {}
    if driver.get("state") == "down":
        findings.append(Finding("warn", "the bridge cannot join Ray as a driver, so it cannot "
                                "read stacks of workers nobody holds nor pause them from "
                                f"outside: {driver.get('why')}", "see docs/deploy.md: the "
                                "bridge must see the raylet's process and Ray's session "
                                "directory (/tmp/ray)"))  # fmt: skip
    try:
        listed = api.get("/api/v1/workers")
        findings.append(Finding("ok", "the bridge accepts this client's token"))
    except BridgeUnavailable as exc:
        findings.append(Finding("FAIL", str(exc), "set RAYDAP_TOKEN, or run on the bridge's "
                                "machine where its connection file has the token"))  # fmt: skip
        return findings
    for record in listed.get("workers", []) if isinstance(listed, dict) else []:
        if record.get("unsupported"):
            findings.append(Finding("warn", f"live worker {record.get('id')} (pid "
                                    f"{record.get('pid')} on {record.get('node_ip')}) lacks: "
                                    + "; ".join(record["unsupported"]),
                                    "see docs/compat.md"))  # fmt: skip
    return findings


def check_requests() -> Finding:
    """Which DAP requests reach workers: those this machine's debugpy answers. One it never
    answers would freeze a worker for every session, so the bridge refuses those."""
    from raydap.live import compat
    from raydap.protocol.commands import UNANSWERED

    refused = ", ".join(sorted(UNANSWERED))
    found = next(f for f in compat.check("bridge", ("debugpy",)) if "on_*_request" in f.hook)
    if found.state == "unsupported":
        return Finding("warn", f"debugpy here does not answer as raydap expects: {found.why}",
                       "use the debugpy that docs/compat.md lists, or report yours")  # fmt: skip
    return Finding("ok", f"debugpy answers every request raydap relays; the bridge refuses, "
                   f"with an error, those debugpy never answers: {refused}")  # fmt: skip


def check_node(answer: dict[str, Any]) -> list[Finding]:
    node = f"node {answer.get('node_ip')} ({str(answer.get('node_id'))[:12]})"
    env: dict[str, str | None] = answer.get("env") or {}
    findings: list[Finding] = []
    if answer.get("debugpy"):
        findings.append(Finding("ok", f"{node}: debugpy {answer['debugpy']}, Ray {answer['ray']}, "
                                f"Python {answer['python']}"))  # fmt: skip
    else:
        findings.append(Finding("FAIL", f"{node}: workers cannot import debugpy, so "
                                "breakpoint() cannot open a debugger",
                                "pip install debugpy in the workers' environment "
                                "(ray[default] brings it)"))  # fmt: skip
    if (env.get("RAY_DEBUG") or "").lower() == "legacy":
        findings.append(Finding("FAIL", f"{node}: workers run with RAY_DEBUG=legacy: breakpoint() "
                                "opens a plain pdb socket that no DAP client (nor raydap) attaches "
                                "to; raydap only lists those",
                                "unset RAY_DEBUG (or set RAY_DEBUG=1) where `ray start` runs on "
                                "that node, and in the job's runtime_env env_vars"))  # fmt: skip
    if answer.get("ray_debugger_external"):
        findings.append(Finding("warn", f"{node}: started with --ray-debugger-external: legacy pdb "
                                "sockets listen on every interface, open to anyone on the network",
                                "drop --ray-debugger-external unless you need legacy pdb "
                                "from other machines"))  # fmt: skip
    post_mortem = env.get("RAY_DEBUG_POST_MORTEM")
    findings.append(Finding("ok", f"{node}: post-mortem debugging "
                            + ("on for every job" if post_mortem == "1" else "not set node-wide "
                               "(a job turns it on with RAY_DEBUG_POST_MORTEM=1 in its "
                               "runtime_env env_vars)")))  # fmt: skip
    findings += _ptrace_findings(node, answer)
    missing = answer.get("unsupported")
    if missing:
        findings.append(Finding("warn", f"{node}: workers lack {len(missing)} private hook(s) of "
                                "debugpy, Ray or torch that raydap uses, so some debugging works "
                                "less there: " + "; ".join(missing),
                                "use the versions docs/compat.md lists, or report the "
                                "versions there"))  # fmt: skip
    elif missing is not None:
        findings.append(Finding("ok", f"{node}: every private hook of debugpy, Ray and torch "
                                "that raydap uses is there"))  # fmt: skip
    if not answer.get("raydap"):
        findings.append(Finding("warn", f"{node}: raydap is not importable by workers: live "
                                "debugging (the worker_process_setup_hook) cannot run there",
                                "pip install raydap on the nodes"))  # fmt: skip
    return findings


def _ptrace_findings(node: str, answer: dict[str, Any]) -> list[Finding]:
    """py-spy and gdb, tried on the node as raydap uses them: on a sibling process."""
    findings: list[Finding] = []
    tried: dict[str, str | None] = answer.get("sibling_attach") or {}
    scope, capable = answer.get("ptrace_scope"), bool(answer.get("cap_sys_ptrace"))
    uses = {"py_spy": "stacks of workers nobody holds cannot be read",
            "gdb": "a hung worker cannot be paused from outside"}  # fmt: skip
    if not answer.get("py_spy"):
        findings.append(Finding("warn", f"{node}: no py-spy on the workers' PATH: "
                                f"{uses['py_spy']}", "pip install py-spy (ray[default] brings "
                                "it); live jobs' stacks need none"))  # fmt: skip
    if not answer.get("gdb"):
        findings.append(Finding("warn", f"{node}: no gdb: {uses['gdb']}",
                                "install gdb on the nodes, or make jobs live (docs/live.md), "
                                "which pause through debugpy"))  # fmt: skip
    for tool, name in (("py_spy", "py-spy"), ("gdb", "gdb")):
        said = tried.get(tool)
        if said:
            why, fix = ptrace_check.advice(scope, capable)
            findings.append(Finding("warn", f"{node}: {name} may not attach to a sibling process "
                                    f"({said}): {uses[tool]}. {why}", fix))  # fmt: skip
        elif said == "":
            findings.append(Finding("ok", f"{node}: {name} attaches to a sibling process"))
    if answer.get("gdb") and not tried.get("gdb") and answer.get("gdb_calls"):
        findings.append(Finding("warn", f"{node}: a hung worker cannot be paused from outside: "
                                f"{answer['gdb_calls']}", "install a newer gdb on the nodes, "
                                "or make jobs live (docs/live.md)"))  # fmt: skip
    return findings


def check_dashboard(url: str) -> Finding:
    """The State API the bridge polls, asked as the bridge asks it (with Ray's token)."""
    request = urllib.request.Request(
        f"{url}/api/v0/nodes?limit=1", headers=ray_auth.dashboard_headers()
    )
    try:
        with urllib.request.urlopen(request, timeout=10):
            return Finding("ok", f"the dashboard's State API answers at {url}")
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            return Finding("FAIL", f"the dashboard refused raydap (HTTP {exc.code}): the cluster "
                           "uses Ray's token auth and the token raydap has is missing or wrong",
                           "give raydap RAY_AUTH_TOKEN or RAY_AUTH_TOKEN_PATH, or put the "
                           "cluster's token in ~/.ray/auth_token")  # fmt: skip
        return Finding("FAIL", f"the dashboard answered HTTP {exc.code} at {url}")
    except OSError as exc:
        return Finding("FAIL", f"the dashboard at {url} is unreachable: {exc}",
                       "is the head running with --include-dashboard=true?")  # fmt: skip


def check_ray(address: str | None) -> list[Finding]:
    try:
        cluster = locate(address, None)
    except ClusterNotFound as exc:
        return [Finding("FAIL", str(exc), "pass --address HOST:PORT or set RAY_ADDRESS")]
    findings = [Finding("ok", f"Ray cluster at {cluster.gcs_address}, "
                        f"dashboard {cluster.dashboard_url}")]  # fmt: skip
    from raydap.live import compat

    here = compat.unsupported("bridge")
    findings.append(Finding("warn", "this machine lacks what raydap calls: " + "; ".join(here),
                            "see docs/compat.md") if here else
                    Finding("ok", "the private Ray calls raydap makes are all here"))  # fmt: skip
    found = ray_auth.token_source()
    if found is not None:
        findings.append(Finding("ok", f"Ray's auth token found in {found[1]}"))
    findings.append(check_dashboard(cluster.dashboard_url))
    if cluster.gcs_address is None:
        return findings
    from raydap.bridge.cluster.probe import ProbeFailed, probe_in_child

    try:
        answers, problems = probe_in_child(cluster.gcs_address)
    except ProbeFailed as exc:
        return [*findings, Finding("FAIL", f"cannot run a probe task on the cluster: {exc}",
                                   "see docs/deploy.md: a Ray driver here must see the "
                                   "raylet's process and Ray's session directory")]  # fmt: skip
    for answer in sorted(answers, key=lambda a: str(a.get("node_ip"))):
        findings += check_node(answer)
    findings += [Finding("FAIL", f"cannot probe {p}", "is the node alive?") for p in problems]
    return findings


def run(address: str | None) -> int:
    findings = [*check_bridge(ApiClient(timeout=5)), check_requests()]
    for finding in findings:
        print(finding, flush=True)
    for finding in check_ray(address):
        findings.append(finding)
        print(finding, flush=True)
    failed = sum(1 for f in findings if f.level == "FAIL")
    print(f"{failed} check(s) failed" if failed else "all checks passed")
    return 1 if failed else 0
