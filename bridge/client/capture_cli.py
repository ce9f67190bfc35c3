"""``raydap capture`` and ``raydap captures``: capture points and what they captured.

raydap capture train.py:120 --if "step % 100 == 0" --rank 0   # set a point
raydap capture --list                                           # the points
raydap capture --clear cp-1a2b3c4d5e                            # clear one
raydap captures --point cp-1a2b3c4d5e --show loss               # loss of every rank
raydap attach cap-0123456789ab                                  # a capture, as a stop
"""

from __future__ import annotations

import argparse
import json
import time
import urllib.parse
from typing import Any

from raydap.bridge.client.api_client import ApiClient


def add_parsers(commands: Any) -> None:
    capture = commands.add_parser(
        "capture",
        help="set a capture point: every rank that reaches the line is recorded and runs on",
        description="A capture point records the stack and locals of every live worker that "
        "reaches PATH:LINE (at most one a second each, by default) and lets it run on: no "
        "stop, nobody waits. `raydap captures` lists what it recorded.",
    )
    chosen = capture.add_mutually_exclusive_group(required=True)
    chosen.add_argument("where", nargs="?", metavar="PATH:LINE", help="the line, as workers see it")
    chosen.add_argument("--list", action="store_true", help="every capture point, by any door")
    chosen.add_argument("--clear", metavar="ID", help="clear a capture point set here or over HTTP")
    capture.add_argument("--if", dest="condition", metavar="EXPR", help="only when this is true")
    capture.add_argument("--job", help="only workers of this job id")
    capture.add_argument("--rank", type=int, help="only this torch.distributed rank")
    capture.add_argument(
        "--ranks",
        help="only the ranks of this rank set: 0-3, tp=1, 'pp=1 dp=0' (docs/rank-sets.md)",
    )
    capture.add_argument("--interval", type=float, help="seconds between two captures of a worker")
    capture.add_argument("--most", type=int, help="captures of one worker at most")
    capture.add_argument("--budget-ms", type=float, metavar="MS", help="CPU ms a capture may cost")
    capture.add_argument("--expires", type=float, metavar="SECONDS", help="stop capturing after")
    capture.add_argument("--json", action="store_true", help="the API's answer as JSON")

    captures = commands.add_parser(
        "captures",
        help="what capture points (and post-mortem stops) recorded",
        description="Captures, oldest first. With --show EXPR and --point ID, one value of "
        "every rank side by side (a path: loss, batch.shape, cfg['lr']; nothing is run).",
    )
    captures.add_argument("--job", help="only captures of this job")
    captures.add_argument("--rank", type=int, help="only this rank's")
    captures.add_argument("--point", help="only this capture point's")
    captures.add_argument("--kind", choices=["point", "exception"], help="only this kind")
    captures.add_argument("--show", metavar="EXPR", help="with --point: EXPR of every rank")
    captures.add_argument("--json", action="store_true", help="the API's answer as JSON")


def cmd_capture(args: argparse.Namespace) -> int:
    api = ApiClient()
    if args.list:
        answer = api.get("/api/v1/capture-points")
        print(json.dumps(answer, indent=2) if args.json else points_table(answer["points"]))
        return 0
    if args.clear:
        api.delete(f"/api/v1/capture-points/{urllib.parse.quote(args.clear, safe='')}")
        print(f"cleared {args.clear}")
        return 0
    path, _, line = str(args.where).rpartition(":")
    if not path or not line.isdigit():
        raise SystemExit(f"raydap capture: say where as PATH:LINE, not {args.where!r}")
    body: dict[str, Any] = {"path": path, "line": int(line)}
    asked = {"condition": args.condition, "job": args.job, "rank": args.rank, "ranks": args.ranks,
             "interval": args.interval, "most": args.most, "budget_ms": args.budget_ms,
             "expires_in": args.expires}  # fmt: skip
    body.update({k: v for k, v in asked.items() if v is not None})
    point = api.post("/api/v1/capture-points", body)
    print(json.dumps(point, indent=2) if args.json else f"capture point {point['id']} at "
          f"{point['path']}:{point['line']} (`raydap captures --point {point['id']}`)")  # fmt: skip
    return 0


def cmd_captures(args: argparse.Namespace) -> int:
    api = ApiClient()
    if args.show:
        if not args.point:
            raise SystemExit("raydap captures: --show goes with --point ID")
        query = urllib.parse.urlencode({"expression": args.show})
        answer = api.get(f"/api/v1/capture-points/{args.point}/show?{query}")
        print(json.dumps(answer, indent=2) if args.json else side_by_side(answer))
        return 0
    query = urllib.parse.urlencode(
        {k: v for k in ("job", "rank", "point", "kind") if (v := getattr(args, k)) is not None}
    )
    answer = api.get(f"/api/v1/captures?{query}")
    print(json.dumps(answer, indent=2) if args.json else captures_table(answer["captures"]))
    return 0


def points_table(points: list[dict[str, Any]]) -> str:
    if not points:
        return "no capture points (set one: raydap capture PATH:LINE)"
    lines = []
    for p in points:
        state = "off: " + p["disabled"] if p["disabled"] else "expired" if p["expired"] else "on"
        only = "".join(f" {k}={p[k]}" for k in ("job", "rank", "ranks") if p.get(k) is not None)
        condition = f" if {p['condition']}" if p["condition"] else ""
        lines.append(f"{p['id']}  {p['path']}:{p['line']}{condition}{only}  "
                     f"{p['captures']} captured  {state}  ({p['owner']})")  # fmt: skip
    return "\n".join(lines)


def captures_table(captures: list[dict[str, Any]]) -> str:
    if not captures:
        return "no captures yet"
    lines = []
    for c in captures:
        when = time.strftime("%H:%M:%S", time.localtime(c["time"]))
        rank = f"rank {c['rank']}" if c["rank"] is not None else c["worker"]
        what = c["point"] or c["exception"] or c["kind"]
        cut = "  (cut)" if c["truncated"] else ""
        lines.append(f"{c['id']}  {when}  {rank}  {c['path']}:{c['line']} {c['function']}  "
                     f"{what}{cut}")  # fmt: skip
    return "\n".join(lines)


def side_by_side(answer: dict[str, Any]) -> str:
    rows = answer["ranks"]
    if not rows:
        return f"no captures of {answer['point']} yet"
    lines = [f"{answer['expression']} at {answer['point']}:"]
    for row in rows:
        who = f"rank {row['rank']}" if row["rank"] is not None else row["worker"]
        value = row["value"]["value"] if "value" in row else f"({row['error']})"
        lines.append(f"  {who:>10}  {value}")
    return "\n".join(lines)
