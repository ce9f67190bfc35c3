"""Plain-text views of merged stacks and hang verdicts for the terminal."""

from __future__ import annotations

import time
from typing import Any

from raydap.bridge.client.render import duration
from raydap.bridge.workers import meshes

#: Locals shown per frame, and characters per value.
SHOWN_LOCALS, VALUE_WIDTH = 12, 60


def _short_path(path: str, width: int) -> str:
    return path if len(path) <= width else "…" + path[-(width - 1) :]


def _rank_names(answer: dict[str, Any]) -> dict[str, str]:
    """``r3``/``r3 critic`` for each worker whose rank or role is known, in rank order."""
    names = {}
    workers = answer.get("workers", [])
    ranked = sorted(workers, key=lambda w: (w.get("rank") is None, w.get("rank") or 0))
    for worker in ranked:
        rank, role = worker.get("rank"), worker.get("role")
        place = meshes.text(worker.get("mesh") or ())
        if rank is not None or role or place:
            names[worker["id"]] = " ".join(
                p for p in (f"r{rank}" if rank is not None else "", role or "", place) if p
            )
    return names


def _members(workers: list[str], names: dict[str, str], shown: int = 4) -> str:
    """``r0, r1, r2 +1`` or ``1a2b3c, 4d5e6f``: a group, by rank where known (in rank
    order, then the others as they came)."""
    order = {worker: place for place, worker in enumerate(names)}
    workers = sorted(workers, key=lambda w: order.get(w.partition("/")[0], len(order)))

    def name(worker: str) -> str:
        base, _, thread = worker.partition("/")
        short = names.get(base) or (base[:6] + (f"/{thread}" if thread else ""))
        return short

    more = f" +{len(workers) - shown}" if len(workers) > shown else ""
    return ", ".join(name(w) for w in workers[:shown]) + more


def _locals_lines(node: dict[str, Any], names: dict[str, str], prefix: str) -> list[str]:
    """One line per local: its value and which ranks hold it; ``≠`` where ranks differ."""
    held: dict[str, dict[str, str]] = node.get("locals") or {}
    variables: dict[str, dict[str, list[str]]] = {}
    for worker, values in held.items():
        for variable, value in values.items():
            variables.setdefault(variable, {}).setdefault(value, []).append(worker)
    lines = []
    for variable in list(variables)[:SHOWN_LOCALS]:
        by_value = variables[variable]
        differ = "≠ " if len(by_value) > 1 else "  "
        for value, workers in by_value.items():
            cut = value if len(value) <= VALUE_WIDTH else value[: VALUE_WIDTH - 1] + "…"
            who = "" if len(by_value) == 1 else f"  [{_members(workers, names)}]"
            lines.append(f"{prefix}{differ}{variable} = {cut}{who}")
    if len(variables) > SHOWN_LOCALS:
        lines.append(f"{prefix}  … {len(variables) - SHOWN_LOCALS} more (--json has all)")
    return lines


def _tree_lines(
    tree: dict[str, Any], names: dict[str, str], count: int, indent: str = ""
) -> list[str]:
    """One line per frame of a merged tree, its workers named where they are fewer than all
    ``count`` (or one)."""
    lines: list[str] = []

    def walk(node: dict[str, Any], prefix: str, last: bool) -> None:
        workers = node.get("workers", [])
        where = f"{_short_path(str(node.get('path')), 48)}:{node.get('line')}"
        group = (
            f"[{len(workers)}: {_members(workers, names)}]"
            if len(workers) < count or count == 1
            else f"[{len(workers)}]"
        )
        lines.append(f"{prefix}{'└─ ' if last else '├─ '}{node.get('function')}  {where}  {group}")
        inner = prefix + ("   " if last else "│  ")
        children = node.get("children", [])
        lines.extend(_locals_lines(node, names, inner + ("│ " if children else "  ")))
        for index, child in enumerate(children):
            walk(child, inner, index == len(children) - 1)

    children = tree.get("children", [])
    for index, child in enumerate(children):
        walk(child, indent, index == len(children) - 1)
    return lines


def stack_tree(answer: dict[str, Any]) -> str:
    """The merged stacks of ``/api/v1/stacks`` as a tree: each frame with its worker count,
    the ranks (or ids) where a group is small, locals where read; then what could not be
    read. Asked ``by`` a mesh dimension: one tree per coordinate along it."""
    tree = answer.get("tree") or {}
    count = len(tree.get("workers", []))
    names = _rank_names(answer)
    lines = (
        [f"{count} worker{'s' if count != 1 else ''}"] if count else ["no worker is running a task"]
    )
    if count and not answer.get("all_frames", True):
        lines[0] += " (Ray's and Python's own frames folded: --all-frames shows them)"
    groups = answer.get("groups")
    if groups is None:
        lines += _tree_lines(tree, names, count)
    for group in groups or []:
        by, coord = answer.get("by"), group.get("coord")
        at = f"{by}={coord}" if coord is not None else f"no {by} coordinate"
        shown = group.get("workers", [])
        lines.append(f"{at}: {len(shown)} worker{'s' if len(shown) != 1 else ''}")
        lines += _tree_lines(group.get("tree") or {}, names, count, "  ")
    for failure in answer.get("failed", []):
        lines.append(f"not read: {failure.get('id')}: {failure.get('reason')}")
    return "\n".join(lines)


def hang_report(answer: dict[str, Any], now: float | None = None) -> str:
    """``/api/v1/hangs`` for a person: each job's state, since when, its groups and
    stragglers."""
    now = time.time() if now is None else now
    jobs = answer.get("jobs", [])
    if answer.get("error"):
        return f"the watch cannot list running workers: {answer['error']}"
    if not jobs:
        watching = answer.get("watching", "live")
        return f"no watched job is running (watching: {watching}; `raydap hangs --job ID` adds one)"
    lines = []
    for job in jobs:
        if job["state"] == "suspected_hang":
            still = duration(now - float(job["since"]))
            lines.append(f"job {job['job']}: SUSPECTED HANG, nothing moved for {still}")
        else:
            lines.append(f"job {job['job']}: progressing")
        lines += _verdict_lines(job)
    return "\n".join(lines)


def _group_ranks(found: dict[str, Any], key: str) -> str:
    """The verdict's ranks of its group; a mesh group's as global ranks, as its summary says
    them (those past the first ``group_ranks`` as the group's own, ``#20``)."""
    ranks: list[int] = found[key]
    named = (found.get("group_ranks") or []) if found.get("mesh_dim") else []
    return ", ".join(str(named[r]) if r < len(named) else f"#{r}" if named else str(r)
                     for r in ranks) or "none"  # fmt: skip


def _verdict_lines(job: dict[str, Any]) -> list[str]:
    lines = [f"  {job['summary']}"]
    found = job.get("collective")
    if found:
        waiting, missing = _group_ranks(found, "waiting"), _group_ranks(found, "missing")
        group = f"group {found['group']} ({found.get('group_desc') or '-'})"
        if found.get("mesh_dim"):
            group = f"the {found['mesh_dim']} group, {group}, global ranks"
        lines.append(
            f"  collective: {found['op']} #{found['seq']} in {group}: waiting {waiting}; "
            f"missing {missing}"
        )
        for odd in found.get("mismatch", []):
            at = f" at {_short_path(odd['path'], 60)}:{odd['line']}" if odd.get("path") else ""
            lines.append(
                f"  mismatch: rank {odd['rank']} called {odd['op']} {odd['sizes']} "
                f"{'/'.join(odd['dtypes'])}{at}"
            )
    for straggler in job.get("stragglers", []):
        who = (
            f"rank {straggler['rank']}"
            if straggler.get("rank") is not None
            else straggler["worker"]
        )
        role = f" ({straggler['role']})" if straggler.get("role") else ""
        role += "".join(f" {dim}={at}" for dim, at in (straggler.get("coords") or {}).items())
        where = f"{_short_path(straggler['path'], 60)}:{straggler['line']}"
        why = f": {straggler['why']}" if straggler.get("why") else ""
        lines.append(
            f"  straggler: {who}{role} {straggler['worker']} in {straggler['function']} "
            f"{where}{why}"
        )
    for wait in job.get("waits", []):
        who = f"rank {wait['rank']}" if wait.get("rank") is not None else wait["worker"]
        called = (
            f" called at {_short_path(wait['called_path'], 60)}:{wait['called_line']}"
            if wait.get("called_path")
            else ""
        )
        blocked_in = f" in {wait['blocked_in']}" if wait.get("blocked_in") else ""
        lines.append(
            f"  waits: {who} for {wait['op']} #{wait['seq']} ({wait['backend']}){called}, "
            f"blocked{blocked_in} at {_short_path(wait['blocked_path'], 60)}:"
            f"{wait['blocked_line']}"
        )
    for unread in job.get("unread", []):
        who = f"rank {unread['rank']}" if unread.get("rank") is not None else unread["worker"]
        lines.append(f"  recorder not read: {who}: {unread['reason']}")
    if job.get("report"):
        lines.append(f"  report: {job['report']}")
    return lines


def saved_report(answer: dict[str, Any]) -> str:
    """``/api/v1/hangs/JOB/report`` for a person: the verdict as it was, and the files."""
    verdict = answer.get("verdict", {})
    at = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(verdict.get("since", 0))))
    lines = [f"job {verdict.get('job')}: hung since {at} (report {answer.get('report')})"]
    lines += _verdict_lines({**verdict, "report": None})
    lines.append("  files: " + ", ".join(answer.get("files", [])))
    if any(name.startswith("rank_") for name in answer.get("files", [])):
        lines.append(
            "  torch's analyzer reads it: python -m torch.distributed.flight_recorder.fr_trace "
            f"{answer.get('report')}"
        )
    return "\n".join(lines)
