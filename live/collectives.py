"""torch.distributed as a live worker knows it: its rank and groups, and its Flight Recorder.

Three things happen here, inside the worker (so nothing of the bridge is imported):

- :func:`arm_recorder` turns torch's Flight Recorder on, with a bounded ring buffer, before the
  job creates its process groups (torch reads ``TORCH_FR_BUFFER_SIZE`` then). A job that set
  the buffer itself (``TORCH_FR_BUFFER_SIZE``, or its older name
  ``TORCH_NCCL_TRACE_BUFFER_SIZE``) keeps its own; ``RAYDAP_FLIGHT_RECORDER=0`` leaves it off.
- :func:`watch_groups` has ``init_process_group`` and ``new_group`` announce the worker's
  rank and groups once they exist (torch is patched only when the job imports it; a worker
  without torch pays one string comparison per import).
- :func:`answer` is what the bridge's ``raydapCollectives`` request gets: the same identity
  and, if asked, the tail of the recorder. pydevd runs it on its reader thread, so it answers
  while the main thread is blocked inside a collective (gloo and NCCL release the GIL there).

torch keeps two recorders: the generic one (``_dump_fr_trace_json``: gloo and other CPU
backends) and NCCL's own (``_dump_nccl_trace_json``, where CUDA collectives go; the generic one
holds none of them). A group made with ``"cpu:gloo,cuda:nccl"`` has entries in both, each
backend numbering its collectives from 1, so each recorder is read and sent apart, by backend,
and never merged (:data:`DUMPS`).

Each recorder is read as torch's own JSON (a few ms). Call sites
(``frames``) only come with torch's pickle dump, whose first call imports ``torch._inductor``
to symbolize stacks (about 2 s, once per process): they are read only when asked, for the
ranks a verdict blames. The pickle is unpickled here, in the process that made it; what leaves
the worker is JSON.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import weakref
from collections.abc import Callable, MutableMapping
from types import ModuleType
from typing import Any

from raydap.live import to_bridge
from raydap.live.timeouts import hold_off
from raydap.protocol.extension import COLLECTIVES, PROCESS_GROUPS

log = logging.getLogger(__name__)

#: ``0`` in a job's environment leaves the recorder off.
SWITCH = "RAYDAP_FLIGHT_RECORDER"
#: What torch reads (and its older name, which it still honours).
BUFFER_VARIABLES = ("TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE")
#: Entries the armed ring buffer keeps: a verdict needs the last few dozen.
ARMED_BUFFER = 256
#: What one answer may carry at most, whatever the bridge asks.
MAX_TAIL = 512
MAX_BYTES = 1024 * 1024
MAX_GROUPS = 256
MAX_FRAMES = 24
#: The longest collective timeout the bridge may set (a week).
MAX_TIMEOUT = 7 * 86_400
_C10D = "torch.distributed.distributed_c10d"
_DEVICE_MESH = "torch.distributed.device_mesh"
#: torch's recorders, by the backend whose entries each holds: its JSON dump and its pickle
#: dump (call sites). A torch built without NCCL (the CPU wheel) has only the first.
DUMPS = {
    "gloo": ("_dump_fr_trace_json", "_dump_fr_trace"),
    "nccl": ("_dump_nccl_trace_json", "_dump_nccl_trace"),
}


def arm_recorder(environ: MutableMapping[str, str]) -> str:
    """Arm torch's Flight Recorder in ``environ`` (the worker's) unless the job chose; says
    which: ``armed``, ``job`` (its own setting kept) or ``off``."""
    if environ.get(SWITCH, "").strip() == "0":
        return "off"
    if any(name in environ for name in BUFFER_VARIABLES):
        return "job"
    environ[BUFFER_VARIABLES[0]] = str(ARMED_BUFFER)
    return "armed"


def recorder_setting(environ: MutableMapping[str, str]) -> int | None:
    """The ring buffer's size torch will use (None: not set, so the recorder is off)."""
    for name in BUFFER_VARIABLES:
        value = environ.get(name, "").strip()
        if value:
            return int(value) if value.isdigit() else None
    return None


# -- who this rank is ------------------------------------------------------------------------


def identity(dist: ModuleType | None) -> dict[str, Any] | None:
    """This process's rank, world and groups (global ranks), or None before
    ``init_process_group`` (or without torch.distributed)."""
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None
    c10d = dist.distributed_c10d
    groups = []
    for group, name in list(c10d._world.pg_names.items())[:MAX_GROUPS]:
        groups.append({
            "name": str(name),
            "desc": str(getattr(group, "group_desc", "") or ""),
            "spans": spans([int(r) for r in c10d.get_process_group_ranks(group)]),
        })  # fmt: skip
    return {
        "rank": int(dist.get_rank()),
        "world_size": int(dist.get_world_size()),
        "backend": str(dist.get_backend()),
        "world": world_of(c10d),
        "groups": groups,
        "meshes": meshes(),
    }


#: The device meshes the job built with ``init_device_mesh``, in order (weakly: a mesh the job
#: dropped is not reported), at most :data:`MAX_MESHES`.
_meshes: list[weakref.ref[Any]] = []
MAX_MESHES = 16


def meshes() -> list[dict[str, Any]]:
    """Each mesh this rank is in, as torch says it: its dimensions' names (``dim_0`` for an
    unnamed one), shape, and this rank's coordinate. What the process groups alone cannot say:
    a dimension as large as the world reuses the default group, described by no dimension."""
    found = []
    for ref in _meshes:
        mesh = ref()
        try:
            coord = mesh.get_coordinate() if mesh is not None else None
            if mesh is None or coord is None:
                continue
            shape = [int(n) for n in mesh.shape]
            names = mesh.mesh_dim_names or [f"dim_{i}" for i in range(len(shape))]
            found.append({"dims": [str(n) for n in names], "shape": shape,
                          "coord": [int(c) for c in coord]})  # fmt: skip
        except Exception:  # torch moved something: the groups still say most of it
            continue
    return found


def spans(ranks: list[int]) -> list[list[int]]:
    """A group's global ranks, in group order, as ``[start, stop, step]`` runs: every rank of
    a world would name the world's every rank (10,000 ranks, 10,000 numbers each) where one
    run says it (``[[0, 10000, 1]]``); strided groups (tensor parallel) are one run too."""
    runs: list[list[int]] = []  # [first, last, step]
    for rank in ranks:
        if runs:
            first, last, step = runs[-1]
            if last == first and rank > first:  # a run of one: this rank sets its step
                runs[-1] = [first, rank, rank - first]
                continue
            if rank == last + step:
                runs[-1][1] = rank
                continue
        runs.append([rank, rank, 1])
    return [[first, last + 1, step] for first, last, step in runs]


def job_of(ray: ModuleType | None) -> str | None:
    """The Ray job this worker runs for (it makes process groups for one), if Ray says."""
    try:
        if ray is None or not ray.is_initialized():  # asking would start a cluster
            return None
        return str(ray.get_runtime_context().get_job_id())
    except Exception:  # Ray moved it
        return None


def world_of(c10d: Any) -> str | None:
    """What tells this world from another one of the same job (verl's worker groups each
    have a rank 0): the address of the store its ranks met at."""
    try:
        store = c10d._get_default_store()
    except Exception:  # no default group, or torch moved it
        return None
    for _ in range(8):  # PrefixStore wraps the real one, sometimes twice
        inner = getattr(store, "underlying_store", None)
        if inner is None:
            break
        store = inner
    host, port = getattr(store, "host", None), getattr(store, "port", None)
    if host is not None and port is not None:
        return f"{host}:{port}"
    path = getattr(store, "path", None)  # a FileStore
    return f"file:{path}" if path else None


def watch_groups(announce: Callable[[dict[str, Any]], None]) -> None:
    """Call ``announce(body)`` each time the job makes a process group or a device mesh
    (``{"identity", "job"}``): now, if torch is loaded, or when the job imports it."""
    for name, patch in ((_C10D, _patch), (_DEVICE_MESH, _patch_meshes)):
        module = sys.modules.get(name)
        if module is not None:
            patch(module, announce)
        else:
            sys.meta_path.insert(0, _AfterImport(name, patch, announce))


class _AfterImport:
    """Patches one of torch.distributed's modules right after it runs, before
    ``torch.distributed`` re-exports what it holds."""

    def __init__(
        self,
        module: str,
        patch: Callable[[ModuleType, Callable[[dict[str, Any]], None]], None],
        announce: Callable[[dict[str, Any]], None],
    ) -> None:
        self.module, self.patch, self.announce = module, patch, announce

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != self.module:
            return None
        import importlib.machinery

        sys.meta_path.remove(self)  # once
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        loader = getattr(spec, "loader", None)
        if spec is None or loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module
        patch, announce = self.patch, self.announce

        def exec_module(module: ModuleType) -> None:
            run(module)
            patch(module, announce)

        loader.exec_module = exec_module
        return spec


def _patch(c10d: ModuleType, announce: Callable[[dict[str, Any]], None]) -> None:
    dist = sys.modules.get("torch.distributed")
    for name in ("init_process_group", "new_group"):
        original = getattr(c10d, name, None)
        if original is None or getattr(original, "__raydap__", False):
            continue
        wrapped = _announcing(original, announce)
        setattr(c10d, name, wrapped)
        if dist is not None and getattr(dist, name, None) is original:
            setattr(dist, name, wrapped)


def _patch_meshes(device_mesh: ModuleType, announce: Callable[[dict[str, Any]], None]) -> None:
    original = getattr(device_mesh, "init_device_mesh", None)
    if original is None or getattr(original, "__raydap__", False):
        return
    wrapped = _announcing(original, announce, _keep_mesh)
    device_mesh.init_device_mesh = wrapped  # type: ignore[attr-defined]
    dist = sys.modules.get("torch.distributed")
    if dist is not None and getattr(dist, "init_device_mesh", None) is original:
        dist.init_device_mesh = wrapped  # type: ignore[attr-defined]


def _keep_mesh(mesh: Any) -> None:
    _meshes[:] = [ref for ref in _meshes if ref() is not None]
    if len(_meshes) < MAX_MESHES:
        _meshes.append(weakref.ref(mesh))


def _announcing(
    make: Callable[..., Any],
    announce: Callable[[dict[str, Any]], None],
    keep: Callable[[Any], None] | None = None,
) -> Any:
    import functools

    @functools.wraps(make)
    def made(*args: Any, **kwargs: Any) -> Any:
        group = make(*args, **kwargs)
        _check_torch_once()
        try:
            if keep is not None:
                keep(group)
            found = identity(sys.modules.get("torch.distributed"))
            if found is not None:
                announce({"identity": found, "job": job_of(sys.modules.get("ray"))})
        except Exception:  # telling the bridge must never break the job
            pass
        return group

    made.__raydap__ = True  # type: ignore[attr-defined]
    return made


_torch_checked = False


def _check_torch_once() -> None:
    """The private torch hooks raydap uses, checked once the job made its first group (torch
    is then whole; importing it at a worker's start would cost every worker seconds): what is
    missing is a warning in the worker's log, and ``raydap doctor`` lists it."""
    global _torch_checked
    if _torch_checked:
        return
    _torch_checked = True
    try:
        from raydap.live import compat

        missing = compat.unsupported("worker", ("torch",))
    except Exception as exc:  # the check must never break the job
        missing = [f"raydap.live.compat: the check failed: {exc!r}"]
    if missing:
        log.warning("raydap.live: this torch lacks what raydap uses, so hang verdicts may "
                    "miss ranks here: %s", "; ".join(missing))  # fmt: skip


# -- what the bridge asks --------------------------------------------------------------------


def answer(
    arguments: dict[str, Any], environ: MutableMapping[str, str] | None = None
) -> dict[str, Any]:
    """The body of a ``raydapCollectives`` response: ``identity``, with ``recorder: true``
    each backend's recorder (``recorders``: its last ``tail`` entries; ``frames: true`` adds
    their call sites), with ``status: true`` only how far each backend got (``pg_status`` and
    ``progress``, a few ms), or ``reason`` saying why there is none. ``recorder`` repeats the
    generic one, for bridges that read only it. ``timeout`` (seconds, or null) sets every
    group's collective timeout first, or gives each its own back (:mod:`.timeouts`)."""
    environ = os.environ if environ is None else environ
    dist = sys.modules.get("torch.distributed")
    body: dict[str, Any] = {
        "identity": identity(dist), "job": job_of(sys.modules.get("ray")), "recorder": None,
        "recorders": None, "reason": None,
    }  # fmt: skip
    if "timeout" in arguments:
        body["timeouts"] = hold_off(dist, _timeout(arguments["timeout"]))
    if not arguments.get("recorder") and not arguments.get("status"):
        return body
    tail = _bounded(arguments.get("tail"), 64, MAX_TAIL)
    budget = _bounded(arguments.get("max_bytes"), MAX_BYTES, MAX_BYTES)
    c10d_c = sys.modules.get("torch._C._distributed_c10d")
    if dist is None or c10d_c is None:
        body["reason"] = "no torch.distributed in this worker"
    elif not hasattr(c10d_c, DUMPS["gloo"][0]):
        body["reason"] = "this torch has no Flight Recorder (torch 2.5 or newer has one)"
    elif not recorder_setting(environ):
        body["reason"] = "the Flight Recorder is off (RAYDAP_FLIGHT_RECORDER=0, or a buffer of 0)"
    else:
        backends = [b for b, (dump, _) in DUMPS.items() if hasattr(c10d_c, dump)]
        share = budget // len(backends)
        recorders = {
            backend: read_recorder(c10d_c, tail, bool(arguments.get("frames")), share, backend)
            if arguments.get("recorder")
            else read_status(c10d_c, backend)
            for backend in backends
        }
        body["recorders"] = recorders
        body["recorder"] = recorders["gloo"]
    return body


def read_status(c10d_c: Any, backend: str = "gloo") -> dict[str, Any]:
    """How far one backend got, without its entries: each group's ``pg_status``, and the
    last op recorded and done by record id (``progress``), which count on where
    ``pg_status`` lags or stays empty (point-to-point ops; NCCL's last completed)."""
    dump = json.loads(getattr(c10d_c, DUMPS[backend][0])())
    entries = [e for e in dump.get("entries") or [] if isinstance(e.get("record_id"), int)]
    done = [e["record_id"] for e in entries if e.get("retired") or e.get("state") == "completed"]
    return {
        "version": str(dump.get("version") or ""),
        "pg_status": dump.get("pg_status") or {},
        "entries": [],
        "progress": {
            "last_record": max((e["record_id"] for e in entries), default=-1),
            "last_done": max(done, default=-1),
        },
    }


def _timeout(value: Any) -> float | None:
    """The ``timeout`` argument: seconds (at most a week), or None for the groups' own."""
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not 0 < value <= MAX_TIMEOUT
    ):
        raise ValueError(f"timeout is seconds, 0 < timeout <= {MAX_TIMEOUT}, or null: {value!r}")
    return float(value)


def _bounded(value: Any, default: int, most: int) -> int:
    return min(value, most) if isinstance(value, int) and value > 0 else default


def read_recorder(
    c10d_c: Any, tail: int, frames: bool, budget: int, backend: str = "gloo"
) -> dict[str, Any]:
    """One backend's recorder as torch's JSON dump says it, cut to its last ``tail`` entries
    and to ``budget`` bytes; ``frames`` adds each entry's Python call site from the pickle
    dump of the same recorder (record ids are a recorder's own)."""
    json_dump, pickle_dump = DUMPS[backend]
    dump = json.loads(getattr(c10d_c, json_dump)())
    entries = list(dump.get("entries") or [])[-tail:]
    if frames and entries:
        import pickle

        # This worker's own dump, unpickled where it was made (never by the bridge).
        full = pickle.loads(getattr(c10d_c, pickle_dump)(includeStackTraces=True))
        by_record = {e.get("record_id"): e.get("frames") for e in full.get("entries") or []}
        for entry in entries:
            stack = by_record.get(entry.get("record_id")) or []
            entry["frames"] = [
                {"name": str(f.get("name")), "filename": str(f.get("filename")),
                 "line": int(f.get("line") or 0)}
                for f in stack[:MAX_FRAMES]
            ]  # fmt: skip
    recorder = {
        "version": str(dump.get("version") or ""),
        "pg_status": dump.get("pg_status") or {},
        "entries": entries,
    }
    while entries and len(json.dumps(recorder)) > budget:
        del entries[: max(1, len(entries) // 4)]  # the oldest go first
    return recorder


# -- pydevd: where the bridge's request lands ------------------------------------------------


def serve(environ: MutableMapping[str, str] | None = None) -> Callable[[dict[str, Any]], None]:
    """Teach this worker's pydevd to answer :data:`COLLECTIVES`; returns the function that
    sends :data:`PROCESS_GROUPS` to the bridge."""
    to_bridge.answer_requests(COLLECTIVES, lambda arguments: answer(arguments, environ))

    def send(body: dict[str, Any]) -> None:
        to_bridge.send_event(PROCESS_GROUPS, body)

    return send
