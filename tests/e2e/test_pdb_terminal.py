"""``raydap attach`` driven as a pdb user drives it: in a real terminal (tmux), on real Ray
jobs paused at ``breakpoint()``, through a real bridge."""

from __future__ import annotations

import re
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import BridgeProcess, Job, break_line, require_tools
from tests.e2e.tmux import PROMPT, Terminal

LEGACY_PROMPT = r"\(Pdb\)"


@pytest.fixture
def terminal(bridge: BridgeProcess, tmp_path: Path) -> Iterator[Callable[..., Terminal]]:
    require_tools(Path(shutil.which("tmux") or "tmux"))
    opened: list[Terminal] = []

    def attach(*arguments: str) -> Terminal:
        env = {"RAYDAP_URL": bridge.url, "RAYDAP_HISTORY": str(tmp_path / "history")}
        opened.append(Terminal([sys.executable, "-m", "raydap.bridge", "attach", *arguments], env))
        return opened[-1]

    yield attach
    for term in opened:
        term.close()


def _prompted(text: str) -> bool:
    lines = text.rstrip().splitlines()
    return bool(lines) and re.fullmatch(PROMPT, lines[-1]) is not None


def test_a_pdb_user_inspects_changes_and_finishes_a_task(
    bridge: BridgeProcess,
    run_job: Callable[[str], Job],
    terminal: Callable[..., Terminal],
    tmp_path: Path,
) -> None:
    job = run_job("pdb_target.py")
    [record] = bridge.wait_records(job.job_id)
    path = record["location"]["path"]
    stop, loop = break_line("pdb_target.py", "scale"), break_line("pdb_target.py", "loop")
    term = terminal(record["id"][:6])

    screen = term.wait_for(_prompted)
    assert f"> {path}({stop})scale()\n-> breakpoint()  # BREAK scale" in screen
    assert term.command("p values") == "[5, 10, 15]"
    assert term.command("pp {'values': values, 'label': label}") == (
        "{'label': 'scaled', 'values': [5, 10, 15]}"
    )
    assert term.command("import os; os.getpid()") == str(record["pid"])
    longlist = term.command("ll").splitlines()
    assert longlist[0].split() == [str(stop - 4), "@ray.remote"]
    assert re.fullmatch(rf"\s*{stop}\s+->\s+breakpoint\(\)  # BREAK scale", longlist[4])
    where = term.command("w").splitlines()
    assert where[-2:] == [f"> {path}({stop})scale()", "-> breakpoint()  # BREAK scale"]
    assert where[0].startswith("  ") and "ray" in where[0]
    error = term.command("p undefined_name")
    assert error == "*** NameError: name 'undefined_name' is not defined"

    # Tab completes a local's name, through the worker.
    term.type("p lab", enter=False)
    term.key("Tab")
    term.wait_for("p label", timeout=10)
    assert term.command("") == "'scaled'"

    assert term.command(f"b {loop}") == f"Breakpoint 1 at {path}:{loop}"
    at_loop = term.command("c")
    assert at_loop.splitlines() == [
        f"> {path}({loop})total_of()",
        "-> total += value  # BREAK loop",
    ]
    assert term.command("p value, total") == "(5, 0)"
    assert term.command("up").startswith(f"> {path}(")
    assert term.command("!factor = 10") == ""
    assert term.command("p factor") == "10"

    term.type("cl")
    term.wait_for("Clear all breaks? ")
    assert term.command("y") == f"Deleted breakpoint 1 at {path}:{loop}"
    term.type("c")
    term.wait_for("EXITED 0")
    assert job.result() == str((5 + 10 + 15) * 10)  # the factor set in the debugger
    history = (tmp_path / "history").read_text()
    assert "p values" in history and "ll" in history


def test_following_a_job_moves_from_rank_to_rank(
    bridge: BridgeProcess, run_job: Callable[[str], Job], terminal: Callable[..., Terminal]
) -> None:
    job = run_job("two_waiting_ranks.py")
    bridge.wait_records(job.job_id, count=2)
    term = terminal("--follow", f"job={job.job_id}")

    # Both ranks followed before typing, as a person waits for both (a join announced after
    # the prompt would print among the command's own lines).
    term.wait_for(lambda text: text.count("raydap: following") == 2 and _prompted(text))
    workers = term.command("workers").splitlines()
    assert len(workers) == 2 and all("rank (pid" in line for line in workers)
    assert sum(line.startswith("*") for line in workers) == 1
    values = term.command("each share").splitlines()
    assert sorted(line.split()[-1] for line in values) == ["100", "200"]
    first = term.command("p share")
    second = term.command("c")
    assert "rank (pid" in second and term.command("p share") != first
    term.type("c")
    assert job.result() == "[100, 200]"
    term.wait_for("EXITED 0", timeout=60)


def test_a_legacy_pdb_breakpoint_is_reached_through_the_bridge(
    bridge: BridgeProcess, run_job: Callable[[str], Job], terminal: Callable[..., Terminal]
) -> None:
    job = run_job("legacy_pdb.py")
    [record] = bridge.wait_records(job.job_id, where=lambda r: r["kind"] == "legacy-pdb")
    term = terminal(record["id"])

    term.wait_for(lambda text: re.search(LEGACY_PROMPT + r"\s*$", text) is not None)
    assert term.command("p x", prompt=LEGACY_PROMPT) == "1"
    term.type("c")
    term.wait_for("EXITED 0")
    assert job.result() == "2"
