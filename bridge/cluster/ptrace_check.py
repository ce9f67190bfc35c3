"""Whether py-spy and gdb may attach on a node as raydap attaches them, and what to change
where they may not: for ``raydap doctor``.

On a node, py-spy and gdb run in a small pinned task and attach to a worker that is their
sibling, never their descendant. ``kernel.yama.ptrace_scope`` 1 (Ubuntu's default) allows only
descendants, so a test on a child of the tester says nothing. :func:`sibling_attach` tries
both tools on a process that is no descendant of theirs, inside a Ray worker (shipped by value
with the probe: the standard library only); :func:`advice` names the cause and its fix.
"""

from __future__ import annotations

import contextlib
import os

#: CAP_SYS_PTRACE's bit in /proc/PID/status's CapEff.
CAP_SYS_PTRACE = 19


def refused(said: str) -> bool:
    """Whether a tool's words say the kernel refused ptrace (rather than anything else)."""
    text = said.lower()
    return "not permitted" in text or "permission denied" in text or "eperm" in text


def has_ptrace_capability(status: str | None = None) -> bool:
    """Whether this process holds CAP_SYS_PTRACE (``status``: /proc/self/status's text)."""
    if status is None:
        try:
            with open("/proc/self/status") as file:
                status = file.read()
        except OSError:
            return False
    for line in status.splitlines():
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) >> CAP_SYS_PTRACE & 1)
    return False


def sibling_attach(py_spy: str | None, gdb: str | None) -> dict[str, str | None]:
    """``{"py_spy": ..., "gdb": ...}``: "" where the tool read a process that is not its
    descendant, its words where it could not, None where the tool is missing."""
    import subprocess
    import sys
    import time

    # The target: a Python process started by a shell that then exits, so that it is handed
    # to init (or a subreaper) and is no descendant of this process nor of the tools.
    started = subprocess.run(
        ["/bin/sh", "-c", f'"{sys.executable}" -c "import time; time.sleep(60)" '
         ">/dev/null 2>&1 </dev/null & echo $!"],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    pid = int(started.stdout.strip() or 0)
    found: dict[str, str | None] = {"py_spy": None, "gdb": None}
    if pid <= 0:
        return {"py_spy": "no process to try", "gdb": "no process to try"}
    try:
        time.sleep(0.3)  # (its interpreter up, for py-spy)
        commands = {
            "py_spy": [py_spy, "dump", "--pid", str(pid)] if py_spy else None,
            "gdb": [gdb, "-nx", "--batch", "-p", str(pid), "-ex", "info inferiors"]
            if gdb
            else None,
        }
        for tool, command in commands.items():
            if command is None:
                continue
            try:
                done = subprocess.run(command, capture_output=True, text=True, timeout=30)
                said = (done.stdout + done.stderr).strip()
                # gdb goes on after a refused attach: it attached where it lists the process
                attached = f"process {pid}" in said if tool == "gdb" else done.returncode == 0
                lines = [x for x in said.splitlines() if refused(x)] or said.splitlines()
                found[tool] = "" if attached else (lines or ["it said nothing"])[0][:300]
            except (OSError, subprocess.TimeoutExpired) as exc:
                found[tool] = str(exc)
    finally:
        with contextlib.suppress(OSError):  # (gone already)
            os.kill(pid, 9)
    return found


def advice(scope: str | None, capable: bool) -> tuple[str, str]:
    """Why the kernel refuses a sibling attach, and the fix: from the node's
    ``kernel.yama.ptrace_scope`` (None: no Yama) and whether the worker holds
    CAP_SYS_PTRACE."""
    live = "; live jobs (raydap.live) need no ptrace for their stacks"
    capability = (
        "give the workers CAP_SYS_PTRACE (a container: securityContext.capabilities.add: "
        "[SYS_PTRACE])"
    )
    if scope == "1" and not capable:
        return (
            "kernel.yama.ptrace_scope is 1: a process may trace only its own descendants, "
            "and raydap's tools attach to a sibling worker",
            "on the node: `sysctl -w kernel.yama.ptrace_scope=0` (and in /etc/sysctl.d/ to "
            f"keep it), or {capability}{live}",
        )
    if scope == "2" and not capable:
        return ("kernel.yama.ptrace_scope is 2: only CAP_SYS_PTRACE may trace",
                f"{capability}, or set kernel.yama.ptrace_scope=0 on the node{live}")  # fmt: skip
    if scope == "3":
        return ("kernel.yama.ptrace_scope is 3: no process may trace (until a reboot)",
                f"set kernel.yama.ptrace_scope=0 at boot (/etc/sysctl.d/){live}")  # fmt: skip
    if not capable:
        return ("the workers lack CAP_SYS_PTRACE (a container's default seccomp and "
                "capabilities refuse ptrace)", f"{capability}{live}")  # fmt: skip
    return ("ptrace is refused although the workers hold CAP_SYS_PTRACE (a seccomp profile or "
            "an LSM such as AppArmor)", f"allow ptrace in that profile{live}")  # fmt: skip
