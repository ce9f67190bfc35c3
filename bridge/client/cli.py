"""The ``raydap`` command line."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import sys
import time
import urllib.parse
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError
from pydantic_core import PydanticUndefined

from raydap.adapter.errors import invalid_fields
from raydap.bridge.client import capture_cli, team_cli, terminal
from raydap.bridge.client.api_client import ApiClient, BridgeUnavailable
from raydap.bridge.client.render import breakpoints_table, table
from raydap.bridge.client.render_stacks import hang_report, saved_report, stack_tree
from raydap.bridge.server.settings import Settings, cli_fields


def _port(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a TCP port (0 to 65535)")
    return value


def _metavar(name: str, annotation: object) -> str:
    if annotation is int and not name.endswith("port"):
        return "N"
    if name.endswith(("interval", "timeout")):
        return "SECONDS"
    return name.split("_")[-1].upper()


def _settings_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per field of :class:`Settings` (its description is the help); a flag not given
    is left for the environment and the field's default."""
    for name, field in cli_fields().items():
        flag = "--" + name.replace("_", "-")
        if field.annotation is bool:
            parser.add_argument(
                flag, action="store_true", default=argparse.SUPPRESS, help=field.description
            )
            continue
        default = "" if field.default in (None, PydanticUndefined) else f" ({field.default})"
        parser.add_argument(
            flag, default=argparse.SUPPRESS, metavar=_metavar(name, field.annotation),
            help=f"{field.description}{default}",
        )  # fmt: skip


def _filter_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--job", help="only workers of this job id")
    parser.add_argument("--task", help="only tasks whose name matches this glob (Actor.method too)")
    parser.add_argument("--actor", help="only this actor (id or class name)")
    parser.add_argument("--node", help="only this node (id prefix or IP)")
    parser.add_argument(
        "--ranks",
        help="only these ranks: a rank set such as 0-3,8, 'dp=0 tp=1:', group=mesh_tp:5 or "
        "'actor 0-3' (terms apart by a space: all hold); docs/rank-sets.md",
    )


def _filter(args: argparse.Namespace) -> dict[str, str]:
    fields = ("job", "task", "actor", "node", "ranks")
    return {k: v for k in fields if (v := getattr(args, k, None))}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="raydap", description="Debug paused Ray workers from any DAP client."
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log more")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = commands.add_parser(
        "serve",
        help="run the bridge on the Ray head",
        description="Every flag can also be set as RAYDAP_<FLAG> in the environment "
        "(RAYDAP_DAP_PORT=7801); RAYDAP_TOKEN adds a debug token.",
    )
    _settings_flags(serve)
    serve.add_argument(
        "--replace",
        nargs="?",
        const=-1,
        type=int,
        metavar="PID",
        help="take over from the bridge running here (or the one with this pid): its ports "
        "and every held worker, paused ones staying paused; it exits once this one serves",
    )

    listing = commands.add_parser("list", help="list paused workers")
    listing.add_argument(
        "--all", action="store_true", help="every held worker: running live ones too"
    )
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.add_argument("--watch", action="store_true", help="refresh until Ctrl-C")

    cont = commands.add_parser("continue", help="continue one paused worker, or a group")
    cont.add_argument("id", nargs="?", help="worker id or unique prefix")
    cont.add_argument("--all", action="store_true", help="every held worker (or filtered)")
    _filter_args(cont)

    ev = commands.add_parser("eval", help="evaluate an expression in every paused worker")
    ev.add_argument("expression")
    _filter_args(ev)

    commands.add_parser("snapshot", help="stacks and locals of every held worker (JSON)")
    stacks = commands.add_parser(
        "stacks",
        help="every worker's stack at once, merged (where is everyone?)",
        description="Every worker running a task (and every paused one), their stacks merged "
        "into one tree: identical paths collapse with a count, diverging frames branch, "
        "largest groups first. Running workers are read with py-spy on their node.",
    )
    _filter_args(stacks)
    stacks.add_argument("--all-threads", action="store_true", help="every thread, not the main")
    stacks.add_argument(
        "--locals", action="store_true", help="each rank's local variables, without pausing it"
    )
    stacks.add_argument("--native", action="store_true", help="native frames too (gloo, NCCL)")
    stacks.add_argument(
        "--all-frames", action="store_true", help="Ray's and Python's own frames too"
    )
    stacks.add_argument(
        "--by", metavar="DIM",
        help="one tree per coordinate along a mesh dimension (pp: where each stage is)",
    )  # fmt: skip
    stacks.add_argument("--json", action="store_true", help="the API's answer as JSON")
    hangs = commands.add_parser(
        "hangs",
        help="which jobs are progressing and which look hung (and which rank holds them up)",
        description="The bridge samples watched jobs' ranks every few seconds; a job whose "
        "ranks stood still for --hang-after seconds, one of them waiting, is a suspected hang, "
        "and the ranks outside the largest waiting group are its stragglers.",
    )
    hangs.add_argument("--job", help="also watch this job (one without live workers)")
    hangs.add_argument("--json", action="store_true", help="the API's answer as JSON")
    hangs.add_argument("--watch", action="store_true", help="refresh until Ctrl-C")
    hangs.add_argument(
        "--report", metavar="JOB", help="the latest hang report of a job (kept after it ended)"
    )
    hangs.add_argument(
        "--save", metavar="FILE", help="with --report: save the whole report as a .tar.gz here"
    )
    pause = commands.add_parser(
        "pause",
        help="pause a running worker in place (no breakpoint() needed); then attach",
        description="One worker by id (a live one through its debugger, any other from "
        "outside, on its node), or with filters every running live worker they match.",
    )
    pause.add_argument(
        "id", nargs="?", help="worker id or unique prefix (`raydap stacks` shows them)"
    )
    _filter_args(pause)
    doctor = commands.add_parser(
        "doctor", help="check the bridge, Ray, and what workers see on every node"
    )
    doctor.add_argument("--address", help="Ray GCS address HOST:PORT (default: RAY_ADDRESS, local)")

    attach = commands.add_parser(
        "attach",
        help="a pdb for paused workers in this terminal",
        description="pdb's commands on a paused worker, through the bridge (h lists them). "
        "With --follow, like `ray debug`: wait for the next paused worker, and after `c` go on "
        "to the next one, until Ctrl-C. A legacy pdb breakpoint (pdb-...) is relayed as is.",
    )
    chosen = attach.add_mutually_exclusive_group(required=True)
    chosen.add_argument(
        "id", nargs="?", help="worker id or unique prefix (`raydap list`), or a capture (cap-...)"
    )
    chosen.add_argument(
        "--follow", nargs="?", const="", metavar="FILTER",
        help="every worker as it pauses: all, or job=ID,task=GLOB,actor=ID,node=IP",
    )  # fmt: skip

    dap = commands.add_parser(
        "dap",
        help="a debug adapter on stdin/stdout for any editor (ssh HEAD raydap dap ...)",
        description="Speak DAP on stdin/stdout, relayed to the bridge on this machine (found "
        "through its connection file, token included). Editors start it as an executable "
        "debug adapter, also over SSH.",
    )
    target = dap.add_mutually_exclusive_group()
    target.add_argument("--breakpoint", metavar="ID", help="attach to this paused worker")
    target.add_argument("--capture", metavar="ID", help="open this capture, read-only")
    target.add_argument(
        "--follow", nargs="?", const="", metavar="FILTER",
        help="follow workers as they pause: all, or job=ID,task=GLOB,actor=ID,node=IP",
    )  # fmt: skip

    capture_cli.add_parsers(commands)
    team_cli.add_parsers(commands)

    commands.add_parser(
        "mcp",
        help="an MCP server on stdin/stdout for coding agents (ssh HEAD raydap mcp)",
        description="Serve the bridge's MCP tools (list_workers, stacks, evaluate, "
        "set_breakpoints, wait_for_pause, ...) on stdin/stdout, relayed to the bridge on this "
        "machine or at RAYDAP_URL with RAYDAP_TOKEN. A view token gets only the reading tools.",
    )

    demo = commands.add_parser("demo", help="run a local example end to end")
    demo.add_argument("--headless", action="store_true", help="attach, inspect, continue, check")
    demo.add_argument("--port", type=_port, default=7800, help="HTTP port (7800; 0 picks)")
    demo.add_argument("--dap-port", type=_port, default=7801, help="DAP port (7801; 0 picks)")
    return parser


def main(argv: list[str] | None = None) -> int:
    with terminal.escaped():  # what a job wrote never acts on the operator's terminal
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    handler = {
        "serve": cmd_serve, "list": cmd_list, "continue": cmd_continue, "eval": cmd_eval,
        "snapshot": cmd_snapshot, "doctor": cmd_doctor, "attach": cmd_attach, "demo": cmd_demo,
        "dap": cmd_dap, "stacks": cmd_stacks, "pause": cmd_pause, "hangs": cmd_hangs,
        "mcp": cmd_mcp, "capture": capture_cli.cmd_capture, "captures": capture_cli.cmd_captures,
        "token": team_cli.cmd_token, "login": team_cli.cmd_login,
    }[args.command]  # fmt: skip
    try:
        return int(handler(args))
    except BridgeUnavailable as exc:
        print(f"raydap: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _flag(field: Sequence[int | str]) -> str:
    """A setting as ``raydap serve`` takes it: ``dap_port`` is ``--dap-port``."""
    return "--" + "-".join(map(str, field)).replace("_", "-")


def cmd_serve(args: argparse.Namespace) -> int:
    from raydap.bridge.server import process

    given = {name: getattr(args, name) for name in cli_fields() if hasattr(args, name)}
    try:
        settings = Settings(**given)
    except ValidationError as exc:
        for line in invalid_fields(exc, whole="settings", most=20, name=_flag):
            print(f"raydap: {line}", file=sys.stderr)
        return 2
    replace = None if args.replace is None else (args.replace if args.replace > 0 else 0)
    return process.serve(settings, replace=replace, argv=sys.argv[1:])


def cmd_list(args: argparse.Namespace) -> int:
    api = ApiClient()
    while True:
        if args.all:
            records = api.get("/api/v1/workers")["workers"]
        else:
            records = api.get("/api/v1/breakpoints")["breakpoints"]
        if args.json:
            print(json.dumps(records, indent=2))
        else:
            if args.watch:
                terminal.control("\x1b[2J\x1b[H")
            what = "held workers" if args.all else "paused workers"
            print(breakpoints_table(records, what), flush=True)
        if not args.watch:
            return 0
        time.sleep(1.0)


def cmd_continue(args: argparse.Namespace) -> int:
    api = ApiClient()
    if args.id and (args.all or _filter(args)):
        print("raydap: give an id or --all/filters, not both", file=sys.stderr)
        return 2
    if args.id:
        result = api.post(f"/api/v1/breakpoints/{args.id}/continue")
    elif args.all or _filter(args):
        result = api.post("/api/v1/continue", {"filter": _filter(args)})
    else:
        print("raydap: name a worker id, or --all (optionally with filters)", file=sys.stderr)
        return 2
    ids = result["continued"]
    print(f"continued {len(ids)} worker(s): {' '.join(ids)}" if ids else "nothing to continue")
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    results = ApiClient().post(
        "/api/v1/evaluate", {"expression": args.expression, "filter": _filter(args)}
    )["results"]
    if not results:
        print("no paused workers match")
        return 1
    rows = [[r["id"], r["result"] if "result" in r else f"error: {r.get('exception', r['error'])}"]
            for r in results]  # fmt: skip
    print(table(["ID", args.expression], rows))
    return 0 if all("result" in r for r in results) else 1


def cmd_snapshot(args: argparse.Namespace) -> int:
    print(json.dumps(ApiClient().get("/api/v1/snapshot"), indent=2))
    return 0


def cmd_stacks(args: argparse.Namespace) -> int:
    flags = [f for f in ("all_threads", "locals", "native", "all_frames") if getattr(args, f)]
    query = {**_filter(args), **dict.fromkeys(flags, "1"), **({"by": args.by} if args.by else {})}
    answer = ApiClient(timeout=120).get("/api/v1/stacks?" + urllib.parse.urlencode(query))
    print(json.dumps(answer, indent=2) if args.json else stack_tree(answer))
    return 0


def cmd_pause(args: argparse.Namespace) -> int:
    if bool(args.id) == bool(_filter(args)):
        print("raydap: name a worker id, or filters such as --job (not both)", file=sys.stderr)
        return 2
    if not args.id:
        answer = ApiClient().post("/api/v1/pause", {"filter": _filter(args)})
        for failed in answer["failed"]:
            print(f"{failed['id']}: {failed['reason']}", file=sys.stderr)
        ids = answer["paused"]
        print(f"paused {len(ids)} worker(s): {' '.join(ids)}" if ids else "no running live worker")
        return 1 if answer["failed"] else 0
    paused = ApiClient(timeout=120).post(f"/api/v1/workers/{urllib.parse.quote(args.id)}/pause")
    if paused.get("pending"):
        print(f"pause of {paused['id']} requested: {paused['reason']} (`raydap list` shows it)")
        return 0
    record = paused["paused"]
    where = record.get("location") or {}
    name = f"{record.get('task_name') or 'worker'}, pid {record['pid']}"
    at = f"{where.get('path')}:{where.get('line')}"
    print(f"paused {record['id']} ({name}) at {at}: `raydap attach {record['id']}`")
    return 0


def cmd_hangs(args: argparse.Namespace) -> int:
    api = ApiClient()
    if args.save and not args.report:
        raise SystemExit("raydap hangs: --save goes with --report JOB")
    if args.report:
        if args.save:
            Path(args.save).write_bytes(api.get_bytes(f"/api/v1/hangs/{args.report}/report.tar.gz"))
            print(f"saved the latest hang report of job {args.report} to {args.save}")
            return 0
        answer = api.get(f"/api/v1/hangs/{args.report}/report")
        print(json.dumps(answer, indent=2) if args.json else saved_report(answer))
        return 0
    if args.job:
        api.post("/api/v1/hangs/watch", {"job": args.job})
    while True:
        answer = api.get("/api/v1/hangs")
        text = json.dumps(answer, indent=2) if args.json else hang_report(answer)
        if not args.watch:
            print(text)
            return 1 if any(j["state"] == "suspected_hang" for j in answer["jobs"]) else 0
        terminal.control("\x1b[2J\x1b[H")
        print(text, flush=True)
        time.sleep(2)


def cmd_doctor(args: argparse.Namespace) -> int:
    from raydap.bridge.client.doctor import run

    return run(args.address)


def cmd_attach(args: argparse.Namespace) -> int:
    from raydap.bridge.client.pdb import console, pdb_relay
    from raydap.bridge.client.stdio_adapter import parse_follow
    from raydap.bridge.workers.filters import BadFilter

    api = ApiClient()
    bridge = api.target
    if args.follow is not None:
        try:
            target: dict[str, object] = {"follow": parse_follow(args.follow)}
        except BadFilter as exc:
            print(f"raydap: --follow {exc}", file=sys.stderr)
            return 2
    elif args.id.startswith("pdb-"):
        return pdb_relay.relay(bridge, args.id)
    elif args.id.startswith("cap-"):
        target = {"capture": args.id}  # a capture, as a read-only stop
    else:
        target = {"breakpoint": args.id}
    dap_port = bridge.dap_port or int(api.get("/healthz")["dap_port"])
    return console.run_terminal(bridge.host, dap_port, target, bridge.token, bridge.ssl_context())


def cmd_dap(args: argparse.Namespace) -> int:
    from raydap.bridge.client import stdio_adapter as adapter
    from raydap.bridge.workers.filters import BadFilter

    try:
        target: dict[str, object] = {}
        if args.breakpoint:
            target["breakpoint"] = args.breakpoint
        elif args.capture:
            target["capture"] = args.capture
        elif args.follow is not None:
            target["follow"] = adapter.parse_follow(args.follow)
    except BadFilter as exc:
        print(f"raydap: --follow {exc}", file=sys.stderr)
        return 2
    try:
        api = ApiClient()
        bridge = api.target
        dap_port = bridge.dap_port or int(api.get("/healthz")["dap_port"])
    except BridgeUnavailable as exc:
        return asyncio.run(adapter.refuse(None, None, str(exc)))
    defaults = adapter.AttachDefaults(bridge.token, target)
    return asyncio.run(adapter.relay(bridge.host, dap_port, defaults, bridge.ssl_context()))


def cmd_mcp(args: argparse.Namespace) -> int:
    from raydap.bridge.client.mcp_relay import relay

    api = ApiClient()
    api.get("/healthz")  # no bridge: say so now, on stderr, rather than to the agent later
    asyncio.run(relay(api.target))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from raydap.bridge.client.demo import run_demo, say

    received: list[signal.Signals] = []

    async def demo() -> int:
        # Ctrl-C and SIGTERM (to the demo or its whole process group: `timeout`, a terminal)
        # stop it the same way: said, then the job, the bridge and the Ray head it started are
        # stopped in order. A second signal while stopping is said and waited out.
        task = asyncio.current_task()
        assert task is not None
        first = 0.0

        def stop(sig: signal.Signals) -> None:
            nonlocal first
            received.append(sig)
            if len(received) == 1:
                first = time.monotonic()
                name = "Ctrl-C" if sig == signal.SIGINT else sig.name
                say(f"\nraydap demo: {name} received: stopping the job, the bridge and Ray")
                task.cancel()
            else:
                say(f"raydap demo: still stopping ({time.monotonic() - first:.0f} s) ...")

        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop, sig)
        return await run_demo(headless=args.headless, port=args.port, dap_port=args.dap_port)

    try:
        return asyncio.run(demo())
    except asyncio.CancelledError:
        return 128 + (received[0] if received else signal.SIGTERM)
