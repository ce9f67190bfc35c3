"""Every private API of debugpy (pydevd), Ray and torch that raydap patches, calls or reads.

A debugpy, Ray or torch upgrade can move any of these, and the code that uses one then does
less without failing: a breakpoint that never hits, a rank not named. So each is listed here
once, with what it touches, why, the versions it was checked on, and a check that looks for
it where it is used:

- a live worker checks the worker's hooks as its setup hook installs (:func:`unsupported`), and
  names what it lacks in its mark; the bridge shows that on the worker's record
  (``unsupported``) and ``raydap doctor`` lists it. Its torch hooks are checked when the job
  imports ``torch.distributed`` (importing torch at start would cost every worker seconds),
  and logged as a warning then;
- ``raydap doctor`` runs every check in a probe task on each node, and the bridge's own (the
  ``bridge`` ones) where it runs.

This module runs inside Ray workers and is shipped by value to nodes without raydap: it
imports nothing of raydap, and a library's modules only inside a check.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

Library = Literal["debugpy", "ray", "torch", "python"]
#: Where the hook is used: in Ray workers (raydap.live, and what the bridge ships into them),
#: or in the bridge's own process.
Where = Literal["worker", "bridge"]

DEBUGPY_CHECKED = "debugpy 1.8.22 on Python 3.10-3.13"
RAY_CHECKED = "Ray 2.60 on Python 3.10-3.13"
TORCH_CHECKED = "torch 2.13 (CPU, gloo; Python 3.11) and 2.11 (CUDA, NCCL; H100)"


@dataclass(frozen=True)
class Hook:
    """One private API raydap depends on."""

    #: Its dotted name, as a reader would look it up.
    name: str
    library: Library
    #: ``patched`` (raydap replaces it), ``called`` or ``read``.
    use: Literal["patched", "called", "read"]
    where: Where
    #: raydap's modules that use it.
    users: tuple[str, ...]
    why: str
    checked: str
    #: The module to import, and the attributes that must be found in it (dotted paths).
    module: str
    attributes: tuple[str, ...] = ()
    #: The Pythons it is used on: from ``since``, and before ``below``.
    since: tuple[int, int] | None = None
    below: tuple[int, int] | None = None
    #: A check of its own, beside the attributes: None when fine, else what is wrong.
    extra: Callable[[Any], str | None] | None = field(default=None, compare=False)
    #: None when it applies in this process, else why not (an NCCL hook without NCCL).
    applies: Callable[[], str | None] | None = field(default=None, compare=False)

    def check(self) -> str | None:
        """None when the hook is as raydap expects; else what is missing. Raises
        :class:`ModuleNotFoundError` when its library is not installed here."""
        _prepare(self.library)
        try:
            module = importlib.import_module(self.module)
        except ModuleNotFoundError as exc:
            if exc.name == self.module.split(".")[0]:
                raise  # the library itself is absent: not this hook's fault
            return f"{self.module} cannot be imported ({exc})"
        except ImportError as exc:
            return f"{self.module} cannot be imported ({exc})"
        for path in self.attributes:
            found: Any = module
            for part in path.split("."):
                if not hasattr(found, part):
                    return f"{self.module}.{path} is gone"
                found = getattr(found, part)
        return self.extra(module) if self.extra is not None else None

    def in_this_python(self) -> bool:
        version = sys.version_info[:2]
        return (self.since is None or version >= self.since) and (
            self.below is None or version < self.below
        )


def _prepare(library: Library) -> None:
    """pydevd's modules are importable once debugpy put its vendored copy on the path (a
    worker whose listener is open has; elsewhere, importing ``debugpy.server`` does)."""
    if library == "debugpy" and "pydevd" not in sys.modules:
        # Outside a worker (doctor): pydevd's warning about frozen modules is not news here.
        os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
        importlib.import_module("debugpy.server")


def _nccl_absent() -> str | None:
    import torch.distributed as dist

    return None if dist.is_nccl_available() else "this torch has no NCCL"


def _callable(path: str) -> Callable[[Any], str | None]:
    def check(module: Any) -> str | None:
        found = module
        for part in path.split("."):
            found = getattr(found, part)
        return None if callable(found) else f"{module.__name__}.{path} is not callable"

    return check


#: DAP requests raydap relays to debugpy, and those it refuses because debugpy never answers
#: them (a copy of :mod:`raydap.protocol.commands`' table, which this module may not import:
#: tests/unit/live/test_compat.py keeps the two equal).
DEBUGPY_ANSWERS = (
    "threads",
    "stackTrace",
    "exceptionInfo",
    "scopes",
    "variables",
    "source",
    "stepInTargets",
    "gotoTargets",
    "modules",
    "evaluate",
    "completions",
    "setExpression",
    "setVariable",
    "setBreakpoints",
    "setFunctionBreakpoints",
    "setExceptionBreakpoints",
    "continue",
    "next",
    "stepIn",
    "stepOut",
    "goto",
    "pause",
    "setDebuggerProperty",
    "pydevdSystemInfo",
    "debugpySystemInfo",
)
DEBUGPY_NEVER_ANSWERS = (
    "dataBreakpointInfo", "breakpointLocations", "loadedSources", "readMemory", "disassemble",
    "locations", "writeMemory", "setDataBreakpoints", "setInstructionBreakpoints", "stepBack",
    "reverseContinue", "restartFrame", "restart", "terminateThreads", "cancel",
)  # fmt: skip


def _debugpy_answers(processor: Any) -> Callable[[str], bool]:
    """Whether debugpy has a handler for a request: its adapter's own (read from its source,
    not imported: the adapter is another process's code) or pydevd's."""
    import importlib.util

    spec = importlib.util.find_spec("debugpy.adapter.clients")
    text = ""
    if spec is not None and spec.origin is not None:
        with open(spec.origin, encoding="utf-8") as file:
            text = file.read()

    def answers(name: str) -> bool:
        handler = f"on_{name.lower()}_request"
        return hasattr(processor, handler) or f"def {name}_request(" in text

    return answers


def _request_handlers(module: Any) -> str | None:
    """debugpy answers what raydap relays, and still lacks what raydap refuses. A request it
    dropped would freeze every worker it reaches; one it gained could be relayed."""
    answers = _debugpy_answers(module.PyDevJsonCommandProcessor)
    dropped = [name for name in DEBUGPY_ANSWERS if not answers(name)]
    gained = [name for name in DEBUGPY_NEVER_ANSWERS if answers(name)]
    problems = []
    if dropped:
        problems.append(f"debugpy no longer answers {', '.join(dropped)}")
    if gained:
        problems.append(
            f"debugpy now answers {', '.join(gained)} (raydap refuses them: see "
            "raydap.protocol.commands)"
        )
    return "; ".join(problems) or None


_PYDEVD = "pydevd"
_COMM = "_pydevd_bundle.pydevd_comm_constants"
_MONITORING = "_pydevd_sys_monitoring.pydevd_sys_monitoring"

HOOKS: tuple[Hook, ...] = (
    # -- debugpy's pydevd, in workers ------------------------------------------------------
    Hook("pydevd.PyDB.on_breakpoints_changed, set_suspend", "debugpy", "patched", "worker",
         ("raydap.live",),
         "a live worker runs untraced (2-5x faster before 3.12) until a breakpoint is added "
         "or a thread is suspended, when these put debugpy's tracing back",
         DEBUGPY_CHECKED, _PYDEVD,
         ("PyDB.on_breakpoints_changed", "PyDB.set_suspend", "PyDB.enable_tracing",
          "PyDB.disable_tracing", "get_global_debugger"),
         below=(3, 12)),
    Hook("_pydevd_bundle.pydevd_constants.PYDEVD_USE_SYS_MONITORING", "debugpy", "read",
         "worker", ("raydap.live",), "whether pydevd traces with sys.monitoring (3.12+): then "
         "tracing on demand is not needed", DEBUGPY_CHECKED,
         "_pydevd_bundle.pydevd_constants", ("PYDEVD_USE_SYS_MONITORING",)),
    Hook("pydevd.PyDB.handle_breakpoint_condition", "debugpy", "patched", "worker",
         ("raydap.live.captures",),
         "a capture point's condition is read, not compiled, at every hit",
         DEBUGPY_CHECKED, _PYDEVD, ("PyDB.handle_breakpoint_condition",)),
    Hook("pydevd_base_schema._requests_to_types, PyDevJsonCommandProcessor", "debugpy",
         "patched", "worker", ("raydap.live.to_bridge",),
         "pydevd answers raydap's own requests (raydapCollectives, raydapStacks) on its "
         "reader thread, while the main thread runs or waits in a collective", DEBUGPY_CHECKED,
         "_pydevd_bundle._debug_adapter.pydevd_base_schema", ("_requests_to_types",),
         extra=lambda _: _has("_pydevd_bundle.pydevd_process_net_command_json",
                              "PyDevJsonCommandProcessor")),
    *(
        Hook("PyDevJsonCommandProcessor.on_*_request, debugpy.adapter.clients", "debugpy",
             "read", where, ("raydap.protocol.commands",),
             "only requests debugpy answers are relayed: one it never answers freezes the "
             "worker's connection for every session", DEBUGPY_CHECKED,
             "_pydevd_bundle.pydevd_process_net_command_json", ("PyDevJsonCommandProcessor",),
             extra=_request_handlers)
        for where in ("worker", "bridge")
    ),
    Hook("pydevd_net_command.NetCommand, CMD_RETURN", "debugpy", "called", "worker",
         ("raydap.live.to_bridge", "raydap.live.collectives"),
         "a live worker tells the bridge its process groups and captures as events",
         DEBUGPY_CHECKED, "_pydevd_bundle.pydevd_net_command", ("NetCommand",),
         extra=lambda _: _has(_COMM, "CMD_RETURN")),
    Hook("pydevd.PyDB.set_trace_for_frame_and_parents, set_additional_thread_info", "debugpy",
         "called", "worker", ("raydap.live.children",),
         "a child process's breakpoint() stops on its own line", DEBUGPY_CHECKED, _PYDEVD,
         ("PyDB.set_trace_for_frame_and_parents", "set_additional_thread_info"),
         extra=lambda _: _has(_COMM, "CMD_SET_BREAK")),
    Hook("pydevd.PyDB._threads_suspended_single_notification", "debugpy", "patched", "worker",
         ("raydap.adapter.upstream.ray_hook",),
         "a post-mortem stop that pydevd nests in itself (3.12+) is re-armed at the user's "
         "frame", DEBUGPY_CHECKED, _PYDEVD,
         ("ThreadsSuspendedSingleNotification.notify_thread_suspended",),
         extra=lambda _: _has(_COMM, "CMD_ADD_EXCEPTION_BREAK"), since=(3, 12)),
    Hook("pydevd_sys_monitoring.suspend_current_thread_tracing, resume_current_thread_tracing",
         "debugpy", "called", "worker",
         ("raydap.live.ray_hook", "raydap.adapter.upstream.ray_hook"),
         "pydevd's own helpers on the way to a stop are not stopped in (3.12+)",
         DEBUGPY_CHECKED, _MONITORING,
         ("suspend_current_thread_tracing", "resume_current_thread_tracing"), since=(3, 12)),
    Hook("pydevd_sys_monitoring.UnhandledExceptionTag", "debugpy", "patched", "worker",
         ("raydap.live.ray_hook", "raydap.adapter.upstream.ray_hook"),
         "pickled as None (copyreg), so ray.get of a failed task does not need pydevd",
         DEBUGPY_CHECKED, _MONITORING, ("UnhandledExceptionTag",), since=(3, 12)),
    Hook("debugpy.server.api.listen.called, wait_for_client.cancel", "debugpy", "patched",
         "worker", ("raydap.bridge.cluster.signal_handlers",),
         "a paused worker whose debugpy adapter died gets a new listener at the same stop",
         DEBUGPY_CHECKED, "debugpy.server.api", ("listen.called", "wait_for_client")),
    Hook("_posixsubprocess.fork_exec", "python", "patched", "worker",
         ("raydap.bridge.cluster.signal_handlers",),
         "the rescue's new debugpy adapter starts as a plain process, not a debugged child",
         "CPython 3.10-3.13", "_posixsubprocess", ("fork_exec",)),
    # -- Ray, in workers ---------------------------------------------------------------------
    Hook("ray.util.debugpy._debugpy_breakpoint, _debugpy_excepthook", "ray", "patched",
         "worker", ("raydap.live.ray_hook",),
         "breakpoint() and post-mortem stops stand at the user's line, not in Ray's hook",
         RAY_CHECKED, "ray.util.debugpy", ("_debugpy_breakpoint", "_debugpy_excepthook")),
    Hook("ray.util.debugpy._ensure_debugger_port_open_thread_safe", "ray", "called", "worker",
         ("raydap.live", "raydap.bridge.cluster.signal_handlers"),
         "a worker opens Ray's own debugpy listener, so the State API lists its port",
         RAY_CHECKED, "ray.util.debugpy",
         ("_ensure_debugger_port_open_thread_safe", "_try_import_debugpy",
          "_override_breakpoint_hooks"),
         extra=_callable("_ensure_debugger_port_open_thread_safe")),
    Hook("ray._private.worker.Worker.worker_paused_by_debugger, set_debugger_port", "ray",
         "called", "worker", ("raydap.live", "raydap.bridge.cluster.signal_handlers",
                              "raydap.bridge.cluster.probe"),
         "a worker paused from outside counts as paused, and a rescued one names its port",
         RAY_CHECKED, "ray._private.worker",
         ("global_worker", "Worker.worker_paused_by_debugger", "Worker.set_debugger_port")),
    Hook("ray.experimental.internal_kv._internal_kv_put", "ray", "called", "worker",
         ("raydap.live",), "a live worker leaves its mark (pid, cwd, rank) for the bridge",
         RAY_CHECKED, "ray.experimental.internal_kv", ("_internal_kv_put",)),
    Hook("ray.util.rpdb.set_trace", "ray", "called", "worker", ("raydap.live",),
         "a live worker's breakpoint() is Ray's again (waits for a debugger)", RAY_CHECKED,
         "ray.util.rpdb", ("set_trace",)),
    # -- Ray, in the bridge ------------------------------------------------------------------
    Hook("ray._private.services.canonicalize_bootstrap_address_or_die", "ray", "called",
         "bridge", ("raydap.bridge.cluster.locate",), "--address is read as Ray reads it",
         RAY_CHECKED, "ray._private.services", ("canonicalize_bootstrap_address_or_die",)),
    Hook("ray._private.ray_constants.RAY_DISABLE_FAILURE_SIGNAL_HANDLER", "ray", "patched",
         "bridge", ("raydap.bridge.cluster.driver_process",),
         "Ray's failure signal handler does not take the SIGTERM that stops the bridge's driver "
         "process (ray#37288)",
         RAY_CHECKED, "ray._private.ray_constants", ("RAY_DISABLE_FAILURE_SIGNAL_HANDLER",)),
    Hook("ray._raylet.GcsClient", "ray", "called", "bridge",
         ("raydap.bridge.cluster.locate", "raydap.bridge.cluster.live_marks"),
         "the bridge reads live workers' marks and kept breakpoints from the GCS", RAY_CHECKED,
         "ray._raylet", ("GcsClient",)),
    Hook("ray._raylet.AuthenticationTokenLoader, Config", "ray", "called", "bridge",
         ("raydap.bridge.cluster.ray_auth",),
         "the bridge's GCS client sends Ray's auth token where one exists", RAY_CHECKED,
         "ray._raylet", ("AuthenticationTokenLoader.instance", "Config.initialize")),
    # -- torch, in workers -------------------------------------------------------------------
    Hook("torch.distributed.distributed_c10d.init_process_group, new_group", "torch",
         "patched", "worker", ("raydap.live.collectives",),
         "a worker tells the bridge its rank and groups as its job makes them", TORCH_CHECKED,
         "torch.distributed.distributed_c10d", ("init_process_group", "new_group")),
    Hook("torch.distributed.distributed_c10d._world.pg_names, _get_default_store", "torch",
         "read", "worker", ("raydap.live.collectives", "raydap.live.timeouts"),
         "a worker's groups, their ranks, and the store that tells one world from another",
         TORCH_CHECKED, "torch.distributed.distributed_c10d",
         ("_world.pg_names", "_get_default_store", "get_process_group_ranks")),
    Hook("torch.distributed.device_mesh.init_device_mesh", "torch", "patched", "worker",
         ("raydap.live.collectives",),
         "a worker tells each device mesh its job builds (names, shape, its coordinate): a "
         "dimension as large as the world has no group of its own to say it",
         "torch 2.13 (CPU, gloo; Python 3.11)",
         "torch.distributed.device_mesh",
         ("init_device_mesh", "DeviceMesh.get_coordinate", "DeviceMesh.mesh_dim_names",
          "DeviceMesh.shape")),
    Hook("torch._C._distributed_c10d._dump_fr_trace_json, _dump_fr_trace", "torch", "called",
         "worker", ("raydap.live.collectives",),
         "torch's Flight Recorder is read for the collective verdict", TORCH_CHECKED,
         "torch._C._distributed_c10d", ("_dump_fr_trace_json", "_dump_fr_trace")),
    Hook("torch._C._distributed_c10d._dump_nccl_trace_json, _dump_nccl_trace", "torch",
         "called", "worker", ("raydap.live.collectives",),
         "NCCL's own recorder is read for the collective verdict on GPUs", TORCH_CHECKED,
         "torch._C._distributed_c10d", ("_dump_nccl_trace_json", "_dump_nccl_trace"),
         applies=_nccl_absent),
    Hook("torch.distributed.ProcessGroup._get_backend, backend._set_default_timeout", "torch",
         "called", "worker", ("raydap.live.timeouts",),
         "a rank stopped alone stretches its peers' collective timeouts", TORCH_CHECKED,
         "torch._C._distributed_c10d", ("ProcessGroupGloo._set_default_timeout",),
         extra=lambda _: _has("torch.distributed", "ProcessGroup._get_backend")),
)  # fmt: skip


def _has(module: str, path: str) -> str | None:
    found: Any = importlib.import_module(module)
    for part in path.split("."):
        if not hasattr(found, part):
            return f"{module}.{path} is gone"
        found = getattr(found, part)
    return None


@dataclass(frozen=True)
class Finding:
    """One hook as found here: ``ok``, ``unsupported`` (``why``), or ``not_here`` (its library
    is not installed, it is not for this Python, or it does not apply: ``why``)."""

    hook: str
    library: Library
    state: Literal["ok", "unsupported", "not_here"]
    why: str = ""

    def as_dict(self) -> dict[str, str]:
        return {"hook": self.hook, "library": self.library, "state": self.state, "why": self.why}


def check(
    where: Where | None = None, libraries: tuple[Library, ...] | None = None
) -> list[Finding]:
    """Each hook's finding in this process (those used ``where``, of ``libraries``)."""
    found = []
    for hook in HOOKS:
        if (where is not None and hook.where != where) or (
            libraries is not None and hook.library not in libraries
        ):
            continue
        found.append(_finding(hook))
    return found


def _finding(hook: Hook) -> Finding:
    if not hook.in_this_python():
        return Finding(hook.name, hook.library, "not_here", "not used on this Python")
    try:
        why_not = hook.applies() if hook.applies is not None else None
        if why_not is not None:
            return Finding(hook.name, hook.library, "not_here", why_not)
        problem = hook.check()
    except ModuleNotFoundError as exc:
        return Finding(hook.name, hook.library, "not_here", f"{exc.name} is not installed")
    except Exception as exc:  # a library that fails to import is the finding, not a crash
        problem = f"checking it failed: {exc!r}"
    if problem is not None:
        return Finding(hook.name, hook.library, "unsupported", problem)
    return Finding(hook.name, hook.library, "ok")


def unsupported(
    where: Where | None = None, libraries: tuple[Library, ...] | None = None
) -> list[str]:
    """What is missing here, one line a hook (``name: why``); empty when all is as expected."""
    return [f"{f.hook}: {f.why}" for f in check(where, libraries) if f.state == "unsupported"]
