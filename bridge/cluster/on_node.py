"""What raydap runs on a worker's own node, inside a small pinned Ray task: read stacks with
py-spy, pause a running worker in place, and make a paused one whose debug port refuses
reachable again.

Shipped to the workers by value, not by import (like the doctor's probe), so it works where
raydap is not installed; it uses only the standard library, Ray and debugpy.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from raydap.bridge.cluster import signal_handlers

#: What one py-spy dump may print (a thousand deep threads fit).
MAX_OUTPUT_BYTES = 8 * 1024 * 1024
#: Lock files that keep two tracers (py-spy, gdb) off one process (:func:`_one_tracer`).
LOCKS = 256

#: Signal that makes an injected worker pause (its own handler is put back first).
PAUSE_SIGNAL_NAME = "SIGUSR2"

#: Installed in a worker to pause it where it is, or to make a paused worker whose debug port
#: refuses reachable again (:mod:`.signal_handlers`): each the text of a module, made here on
#: the bridge, since this module is shipped to the node by value.
PAUSE_HANDLER = signal_handlers.installing(signal_handlers.raydap_pause)
RESCUE_HANDLER = signal_handlers.installing(signal_handlers.raydap_rescue)


def _private_folder(*parts: str) -> str:
    """A directory only this user may write to, made on first use: ``~/.cache/raydap``, else
    (a home that cannot be written, as in some containers) ``raydap-UID`` in the temporary
    directory. A folder that is a link or another user's is never used."""
    import stat
    import tempfile

    reasons = []
    for base in (
        os.path.join(os.path.expanduser("~"), ".cache", "raydap"),
        os.path.join(tempfile.gettempdir(), f"raydap-{os.getuid()}"),
    ):
        folder = os.path.join(base, *parts)
        try:
            os.makedirs(base, mode=0o700, exist_ok=True)
            found = os.lstat(base)
            if stat.S_ISLNK(found.st_mode) or found.st_uid != os.getuid():
                raise PermissionError(f"{base} is a link or another user's")
            if found.st_mode & 0o077:  # ours but open to others (made by hand): tightened
                os.chmod(base, 0o700)
            os.makedirs(folder, mode=0o700, exist_ok=True)
            return folder
        except OSError as exc:
            reasons.append(f"{base}: {exc}")
    raise PermissionError("no private folder for raydap on this node: " + "; ".join(reasons))


def _handler_file(name: str, source: str) -> str:
    """Where a handler is written: a directory only this user may write to."""
    folder = _private_folder()
    path = os.path.join(folder, f"{name}.py")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
    with os.fdopen(os.open(path, flags, 0o600), "w") as file:
        file.write(source)
    return path


def _search_path() -> str:
    import sys

    return os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])


def read_stacks(
    pids: list[int],
    timeout: float,
    flags: tuple[str, ...] = (),
    environment: tuple[str, ...] = (),
) -> dict[int, dict[str, Any]]:
    """``py-spy dump --json`` of each pid, in parallel: ``{"json": ..., "env": {...}}`` or
    ``{"error": ...}``. ``flags``: py-spy's ``--locals``, ``--native`` and ``--nonblocking``
    (the hang watch's: a rank it samples is not stopped while read); ``environment``:
    variables read from each process's environment as it started (``/proc/PID/environ``:
    what names its rank)."""
    import shutil
    import subprocess
    from concurrent.futures import ThreadPoolExecutor

    flags = tuple(f for f in flags if f in ("--locals", "--native", "--nonblocking"))
    py_spy = shutil.which("py-spy", path=_search_path())
    if py_spy is None:
        missing = {
            "error": "py-spy is not installed where this node's workers run (pip install py-spy)"
        }
        return {pid: missing for pid in pids}

    def dump(pid: int) -> dict[str, Any]:
        try:
            with _one_tracer(pid):
                done = subprocess.run(
                    [py_spy, "dump", "--pid", str(pid), "--json", *flags],
                    capture_output=True, timeout=timeout, check=False,
                )  # fmt: skip
        except subprocess.TimeoutExpired:
            return {"error": f"py-spy took over {timeout:g} s"}
        if done.returncode != 0:
            lines = done.stderr.decode(errors="replace").strip().splitlines()
            why = lines[0] if lines else f"py-spy exited with {done.returncode}"
            if "Permission denied" in why or "Operation not permitted" in why:
                why += " (py-spy needs ptrace: CAP_SYS_PTRACE, or kernel.yama.ptrace_scope=0)"
            return {"error": why.removeprefix("Error: ")}
        if len(done.stdout) > MAX_OUTPUT_BYTES:
            return {"error": f"py-spy printed over {MAX_OUTPUT_BYTES} bytes"}
        return {"json": done.stdout.decode(errors="replace"), "env": _environment(pid, environment)}

    with ThreadPoolExecutor(max_workers=min(16, len(pids) or 1)) as pool:
        return dict(zip(pids, pool.map(dump, pids), strict=True))


@contextlib.contextmanager
def _one_tracer(pid: int) -> Iterator[None]:
    """One tracer at a time per process on this node: a process has one ptrace tracer, so a
    second py-spy dump at the same moment (the hang watch's and a person's ``raydap stacks``),
    or gdb injecting a pause meanwhile, fails.
    The lock is a file lock, held across the tasks and processes that read here; processes
    share :data:`LOCKS` files (a rare wait of one dump), so no file is left per process."""
    import fcntl

    folder = _private_folder("locks")
    with open(os.path.join(folder, f"py-spy-{pid % LOCKS}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a dump takes about 0.1 s; py-spy's timeout bounds it
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _environment(pid: int, wanted: tuple[str, ...]) -> dict[str, str]:
    """Those of ``wanted`` in the process's starting environment (Linux), short values only."""
    if not wanted:
        return {}
    try:
        with open(f"/proc/{pid}/environ", "rb") as file:
            raw = file.read(1 << 20)
    except OSError:
        return {}
    found: dict[str, str] = {}
    for entry in raw.split(b"\0"):
        name, _, value = entry.decode(errors="replace").partition("=")
        if name in wanted and len(value) <= 64:
            found[name] = value
    return found


def pause_in_place(pid: int) -> str:
    """Make ``pid`` pause where it is (:data:`PAUSE_HANDLER`). "" once done, else why not
    and what to install or allow."""
    return _signal_handler_into(pid, "pause_handler", PAUSE_HANDLER)


def rescue_in_place(pid: int) -> str:
    """Make ``pid``, paused at ``breakpoint()`` behind a dead debugpy adapter, reachable
    again at the same stop (:data:`RESCUE_HANDLER`). "" once the handler was set off, else
    why not and what to install or allow."""
    return _signal_handler_into(pid, "rescue_handler", RESCUE_HANDLER)


def _signal_handler_into(pid: int, name: str, source: str) -> str:
    """Install a handler of :data:`PAUSE_SIGNAL_NAME` in ``pid``, then send the signal.

    Python < 3.14: debugpy's attach-by-pid machinery (gdb calls into the process).
    Python >= 3.14: ``sys.remote_exec`` (its code runs at the next bytecode, so the signal
    follows a moment later)."""
    import signal
    import sys
    import tempfile
    import time

    if os.environ.get("PYTHON_DISABLE_REMOTE_DEBUG"):
        return "PYTHON_DISABLE_REMOTE_DEBUG is set where the worker runs: unset it to allow this"
    handler = _handler_file(name, source)
    install = f"exec(compile(open({handler!r}).read(), {handler!r}, 'exec'), {{}})"
    if sys.version_info >= (3, 14):
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as script:
            script.write(install)
        try:
            sys.remote_exec(pid, script.name)  # type: ignore[attr-defined]
        except (OSError, RuntimeError) as exc:
            return f"sys.remote_exec into pid {pid} failed: {exc}"
        time.sleep(0.2)
    else:
        with _one_tracer(pid):
            failed = _inject_with_gdb(pid, install)
        if failed:
            return failed
    try:
        os.kill(pid, getattr(signal, PAUSE_SIGNAL_NAME))
    except ProcessLookupError:
        return f"pid {pid} exited"
    return ""


#: What :func:`gdb_call_refusal` found, by gdb binary: once per process.
_GDB_CALLS: dict[str, str] = {}


def gdb_call_refusal(gdb: str) -> str:
    """Why ``gdb`` must not call into a process on this node, or "" if it can.

    An injection is a function call gdb makes inside the worker, after which it puts the
    worker's registers back. gdb 13 cannot put them back on CPUs with AMX (Sapphire Rapids and
    later): "Couldn't write extended state status: Bad address", and the process it called
    into then fails (measured: a sleeping process died of "Unknown error 516"). So gdb is tried
    first on a throwaway child of this task, and a worker is never handed to a gdb that broke
    it."""
    import shutil
    import subprocess
    import sys

    if gdb in _GDB_CALLS:
        return _GDB_CALLS[gdb]
    sleeper = shutil.which("sleep")
    command = [sleeper, "60"] if sleeper else [sys.executable, "-c", "import time; time.sleep(60)"]
    child = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        done = subprocess.run(
            [gdb, "-nx", "--batch", "-p", str(child.pid), "-ex", "call (int)getpid()"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        said = done.stdout + done.stderr
    except (OSError, subprocess.TimeoutExpired) as exc:
        said = str(exc)
    finally:
        child.kill()
        child.wait()
    if f"= {child.pid}" in said:
        refusal = ""
    elif "ptrace" in said and ("not permitted" in said or "denied" in said):
        refusal = (
            "gdb may not attach to processes here: allow ptrace (a container needs SYS_PTRACE; "
            "or kernel.yama.ptrace_scope=0)"
        )
    else:
        noise = ("[Inferior", "Using host libthread_db", "No such file or directory")
        lines = [
            x.strip() for x in said.splitlines() if x.strip() and not any(n in x for n in noise)
        ]
        said_last = lines[-1] if lines else "it said nothing"
        refusal = (
            f"gdb cannot call into a process on this node and give it back intact ({said_last}): "
            "pausing a worker from outside would break it, so it is not done. gdb 13 has this "
            "bug on CPUs with AMX; install a gdb for which `gdb -p PID --batch -ex 'call "
            "(int)getpid()'` prints the pid, or run the job with the live hook "
            "(raydap.live.setup), which pauses through debugpy"
        )
    _GDB_CALLS[gdb] = refusal
    return refusal


def _inject_with_gdb(pid: int, install: str) -> str:
    import importlib.util
    import shutil
    import sys
    import tempfile

    gdb = shutil.which("gdb", path=_search_path())
    if gdb is None:
        return (
            "gdb is not installed on this node (apt-get install gdb; a container needs SYS_PTRACE)"
        )
    refusal = gdb_call_refusal(gdb)
    if refusal:
        return refusal
    found = importlib.util.find_spec("debugpy")
    if found is None or found.origin is None:
        return "debugpy is not installed where this node's workers run (pip install debugpy)"
    helpers = os.path.join(
        os.path.dirname(found.origin), "_vendored", "pydevd", "pydevd_attach_to_process"
    )
    sys.path.insert(0, helpers)
    try:
        from add_code_to_python_process import run_python_code  # type: ignore[import-not-found]
    finally:
        sys.path.remove(helpers)
    # gdb passes the code as a C string: no quotes may appear in it, so it goes as bytes.
    code = "exec(bytes(%s))" % list(install.encode())  # noqa: UP031
    with tempfile.TemporaryFile("w+") as said:
        saved = os.dup(1), os.dup(2)
        os.dup2(said.fileno(), 1)
        os.dup2(said.fileno(), 2)
        try:
            run_python_code(pid, code, connect_debugger_tracing=False, show_debug_info=0)
            failed: Any = None
        except Exception as exc:  # gdb's failure, in its own words below
            failed = exc
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
        said.seek(0)
        output = said.read()[-4000:]
    if failed is None:
        return ""
    if "ptrace" in output and ("not permitted" in output or "denied" in output):
        return (
            f"gdb may not attach to pid {pid}: allow ptrace (a container needs SYS_PTRACE; "
            "or kernel.yama.ptrace_scope=0)"
        )
    last = [line for line in output.splitlines() if line.strip()][-3:]
    return f"could not inject into pid {pid}: {failed}; gdb said: {' | '.join(last)}"
