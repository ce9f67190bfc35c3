"""What a Ray worker on each node actually sees, for ``raydap doctor``.

:func:`probe` runs inside a worker (a zero-CPU task pinned to each alive node). It is shipped to
the workers by value, not by import, so it works where raydap is not installed, which is one of
the things it reports. It uses nothing but the standard library and Ray.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

#: Environment variables that decide how ``breakpoint()`` behaves in a worker.
DEBUG_VARIABLES = ("RAY_DEBUG", "RAY_DEBUG_POST_MORTEM", "PYTHON_DISABLE_REMOTE_DEBUG")


def probe(
    gdb_check: Callable[[str], str] | None = None,
    hooks_check: Callable[[], list[str]] | None = None,
    attach_check: Callable[[str | None, str | None], dict[str, str | None]] | None = None,
    capability_check: Callable[[], bool] | None = None,
) -> dict[str, Any]:
    """The facts of this worker's node and environment. ``gdb_check``: says why gdb must not
    call into processes here (:func:`raydap.bridge.cluster.on_node.gdb_call_refusal`, shipped
    with this by value), "" if it may. ``hooks_check``: the private hooks raydap uses that a
    worker here lacks (:func:`raydap.live.compat.unsupported`, shipped by value too).
    ``attach_check``: py-spy's and gdb's attach to a sibling process, as the nodes attach
    (:func:`raydap.bridge.cluster.ptrace_check.sibling_attach`); ``capability_check``: whether
    the worker holds CAP_SYS_PTRACE."""
    import importlib.util
    import shutil
    import sys

    import ray

    worker = ray._private.worker.global_worker
    search = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope") as file:
            ptrace_scope: str | None = file.read().strip()
    except OSError:
        ptrace_scope = None
    try:
        import debugpy

        debugpy_version: str | None = str(debugpy.__version__)
    except ImportError:
        debugpy_version = None
    gdb = shutil.which("gdb", path=search)
    py_spy = shutil.which("py-spy", path=search)
    return {
        "node_id": ray.get_runtime_context().get_node_id(),
        "node_ip": worker.node_ip_address,
        "python": sys.version.split()[0],
        "ray": ray.__version__,
        "debugpy": debugpy_version,
        "env": {name: os.environ.get(name) for name in DEBUG_VARIABLES},
        "ray_debugger_external": bool(getattr(worker, "ray_debugger_external", False)),
        "py_spy": py_spy,
        "gdb": gdb,
        "gdb_calls": gdb_check(gdb) if gdb and gdb_check else None,
        "ptrace_scope": ptrace_scope,
        "sibling_attach": attach_check(py_spy, gdb) if attach_check else None,
        "cap_sys_ptrace": capability_check() if capability_check else None,
        "raydap": importlib.util.find_spec("raydap") is not None,
        "unsupported": hooks_check() if hooks_check is not None else None,
    }


class ProbeFailed(Exception):
    """The probe could not run; the message says why."""


def probe_in_child(address: str, timeout: float = 60.0) -> tuple[list[dict[str, Any]], list[str]]:
    """:func:`probe_every_node` in a process of its own: Ray can abort the process that joins
    it as a driver (a raylet seen but not reached), and that must not take ``doctor`` with it.
    Ray's own words go to stderr as they come."""
    import json
    import subprocess
    import sys

    from raydap.bridge.cluster.driver import exit_text

    command = [sys.executable, "-m", __name__, address, str(timeout)]
    try:
        done = subprocess.run(
            command, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
            timeout=timeout + 90,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise ProbeFailed(f"joining Ray at {address} took over {timeout + 90:g} s") from None
    lines = done.stdout.strip().splitlines()
    try:
        answer = json.loads(lines[-1]) if lines else None
    except ValueError:
        answer = None
    if done.returncode != 0 or not isinstance(answer, dict):
        raise ProbeFailed(
            f"the Ray driver joining {address} ended ({exit_text(done.returncode)}; Ray's words "
            "are above)"
        )
    if "error" in answer:
        raise ProbeFailed(str(answer["error"]))
    return list(answer["answers"]), [str(p) for p in answer["problems"]]


def probe_every_node(address: str, timeout: float = 60.0) -> tuple[list[dict[str, Any]], list[str]]:
    """Run :func:`probe` on every alive node of the cluster at ``address`` (a GCS address):
    the answers, and what could not be probed (node, reason)."""
    import logging
    import sys

    import ray
    from ray import cloudpickle
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from raydap.bridge.cluster import on_node, ptrace_check
    from raydap.live import compat

    for module in (__name__, on_node.__name__, compat.__name__, ptrace_check.__name__):
        cloudpickle.register_pickle_by_value(sys.modules[module])  # type: ignore[no-untyped-call]
    ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False)
    try:
        remote = ray.remote(num_cpus=0, max_retries=0)(probe)
        nodes = [n for n in ray.nodes() if n.get("Alive")]  # type: ignore[no-untyped-call]
        pending = {
            remote.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)
            ).remote(
                on_node.gdb_call_refusal,
                compat.unsupported,
                ptrace_check.sibling_attach,
                ptrace_check.has_ptrace_capability,
            ): n
            for n in nodes
        }
        ready, missing = ray.wait(list(pending), num_returns=len(pending), timeout=timeout)
        answers, problems = [], []
        for ref in ready:
            try:
                answers.append(ray.get(ref))
            except Exception as exc:  # the probe failed on that node: say so, go on
                problems.append(f"node {pending[ref]['NodeManagerAddress']}: {exc}")
        for ref in missing:
            node = pending[ref]
            problems.append(f"node {node['NodeManagerAddress']}: no answer within {timeout:g} s")
        return answers, problems
    finally:
        ray.shutdown()


if __name__ == "__main__":
    import json
    import sys

    try:
        found, failed = probe_every_node(sys.argv[1], float(sys.argv[2]))
        print(json.dumps({"answers": found, "problems": failed}, default=str))
    except Exception as exc:  # Ray's own errors: said to doctor, which says what to do
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
