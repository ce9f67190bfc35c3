"""The worker side of collective verdicts (``raydap.live.collectives``): arming torch's Flight
Recorder, naming the rank from its process group, and answering the bridge on pydevd's
reader thread. Small fakes stand in for torch where a case needs one; the last test runs two
real gloo ranks (torch is on Python 3.11 here)."""

from __future__ import annotations

import json
import sys
import threading
import types
from typing import Any

import pytest

from raydap.live import collectives
from raydap.protocol.extension import COLLECTIVES
from tests.unit.live.gloo_ranks import run_two_ranks


@pytest.mark.parametrize(
    ("environ", "said", "buffer"),
    [
        ({}, "armed", "256"),
        ({"RAYDAP_FLIGHT_RECORDER": "0"}, "off", None),
        ({"TORCH_FR_BUFFER_SIZE": "5000"}, "job", "5000"),
        ({"TORCH_NCCL_TRACE_BUFFER_SIZE": "100"}, "job", None),  # torch's older name, kept
    ],
)
def test_the_recorder_is_armed_unless_the_job_chose(
    environ: dict[str, str], said: str, buffer: str | None
) -> None:
    assert collectives.arm_recorder(environ) == said
    assert environ.get("TORCH_FR_BUFFER_SIZE") == buffer
    setting = collectives.recorder_setting(environ)
    assert setting == (None if said == "off" else int(buffer or environ.get(
        "TORCH_NCCL_TRACE_BUFFER_SIZE", "0")))  # fmt: skip


class FakeGroup:
    def __init__(self, desc: str) -> None:
        self.group_desc = desc


def fake_dist(initialized: bool = True) -> types.ModuleType:
    """torch.distributed as a worker of world 10.0.0.1:29500 that is rank 2 of 4 sees it."""
    default, pair = FakeGroup("default_pg"), FakeGroup("undefined")
    store = types.SimpleNamespace(underlying_store=types.SimpleNamespace(
        underlying_store=None, host="10.0.0.1", port=29500))  # fmt: skip
    c10d = types.SimpleNamespace(
        _world=types.SimpleNamespace(pg_names={default: "0", pair: "1"}),
        get_process_group_ranks=lambda g: [0, 1, 2, 3] if g is default else [2, 3],
        _get_default_store=lambda: store,
    )
    dist = types.ModuleType("torch.distributed")
    dist.is_available = lambda: True  # type: ignore[attr-defined]
    dist.is_initialized = lambda: initialized  # type: ignore[attr-defined]
    dist.get_rank = lambda: 2  # type: ignore[attr-defined]
    dist.get_world_size = lambda: 4  # type: ignore[attr-defined]
    dist.get_backend = lambda: "gloo"  # type: ignore[attr-defined]
    dist.distributed_c10d = c10d  # type: ignore[attr-defined]
    return dist


def test_the_identity_is_torchs_rank_world_and_groups() -> None:
    assert collectives.identity(None) is None
    assert collectives.identity(fake_dist(initialized=False)) is None
    assert collectives.identity(fake_dist()) == {
        "rank": 2, "world_size": 4, "backend": "gloo", "world": "10.0.0.1:29500",
        "groups": [{"name": "0", "desc": "default_pg", "spans": [[0, 4, 1]]},
                   {"name": "1", "desc": "undefined", "spans": [[2, 4, 1]]}],
        "meshes": [],  # (none built with init_device_mesh here)
    }  # fmt: skip


class FakeRecorder:
    """torch._C._distributed_c10d's two dumps, of ``count`` all_reduces."""

    def __init__(self, count: int) -> None:
        self.entries = [
            {"record_id": i, "process_group": ["0", "default_pg"], "collective_seq_id": i + 1,
             "profiling_name": "gloo:all_reduce", "input_sizes": [[4]], "retired": True}
            for i in range(count)
        ]  # fmt: skip
        self.pickled = 0

    def _dump_fr_trace_json(self) -> bytes:
        return json.dumps(
            {"version": "2.10", "pg_status": {"0": {}}, "entries": self.entries}
        ).encode()

    def _dump_fr_trace(self, includeStackTraces: bool = True) -> bytes:
        import pickle

        self.pickled += 1
        frames = [{"name": "step", "filename": "/job/train.py", "line": 7}]
        return pickle.dumps({"entries": [{**e, "frames": frames} for e in self.entries]})


def test_the_recorder_is_read_as_its_tail_and_within_the_byte_budget() -> None:
    recorder = FakeRecorder(300)
    read = collectives.read_recorder(recorder, 64, False, 10**6)
    assert [e["collective_seq_id"] for e in read["entries"]] == list(range(237, 301))
    assert recorder.pickled == 0 and "frames" not in read["entries"][0]  # call sites cost
    small = collectives.read_recorder(recorder, 64, False, 2_000)
    assert 0 < len(small["entries"]) < 64 and small["entries"][-1]["collective_seq_id"] == 300
    assert len(json.dumps(small)) <= 2_000
    framed = collectives.read_recorder(recorder, 2, True, 10**6)
    assert framed["entries"][-1]["frames"] == [{"name": "step", "filename": "/job/train.py",
                                                "line": 7}]  # fmt: skip


def test_the_answer_says_why_there_is_no_recorder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "torch.distributed", raising=False)
    assert collectives.answer({"recorder": False}) == {
        "identity": None, "job": None, "recorder": None, "recorders": None, "reason": None,
    }  # fmt: skip
    said = collectives.answer({"recorder": True}, {})
    assert said["reason"] == "no torch.distributed in this worker"
    monkeypatch.setitem(sys.modules, "torch.distributed", fake_dist())
    monkeypatch.setitem(sys.modules, "torch._C._distributed_c10d", types.ModuleType("old"))
    said = collectives.answer({"recorder": True}, {"TORCH_FR_BUFFER_SIZE": "256"})
    assert said["identity"]["rank"] == 2 and "no Flight Recorder" in said["reason"]
    monkeypatch.setitem(sys.modules, "torch._C._distributed_c10d", FakeRecorder(3))
    assert "is off" in collectives.answer({"recorder": True}, {})["reason"]
    on = collectives.answer({"recorder": True, "tail": 10**9}, {"TORCH_FR_BUFFER_SIZE": "9"})
    assert on["reason"] is None and len(on["recorder"]["entries"]) == 3


class FakeNcclRecorder(FakeRecorder):
    """A CUDA torch's: the generic recorder holds the gloo ops, NCCL's its own, each numbered
    from 1, each with its own record ids and call sites."""

    def __init__(self) -> None:
        super().__init__(2)
        self.nccl = [
            {"record_id": i, "process_group": ["0", "default_pg"], "collective_seq_id": i + 1,
             "profiling_name": "nccl:all_reduce", "state": "completed", "retired": i < 3}
            for i in range(5)
        ]  # fmt: skip

    def _dump_nccl_trace_json(self, includeCollectives: bool = True) -> bytes:
        status = {"0": {"last_enqueued_collective": "5", "last_completed_collective": "-1"}}
        entries = self.nccl if includeCollectives else []
        return json.dumps({"version": "2.10", "pg_status": status, "entries": entries}).encode()

    def _dump_nccl_trace(self, includeStackTraces: bool = True) -> bytes:
        import pickle

        frames = [{"name": "train", "filename": "/job/gpu.py", "line": 44}]
        return pickle.dumps({"entries": [{**e, "frames": frames} for e in self.nccl]})


def test_each_backends_recorder_is_read_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch.distributed", fake_dist())
    monkeypatch.setitem(sys.modules, "torch._C._distributed_c10d", FakeNcclRecorder())
    environ = {"TORCH_FR_BUFFER_SIZE": "256"}
    said = collectives.answer({"recorder": True, "frames": True}, environ)
    recorders = said["recorders"]
    assert set(recorders) == {"gloo", "nccl"} and said["recorder"] == recorders["gloo"]
    assert [e["profiling_name"] for e in recorders["gloo"]["entries"]] == ["gloo:all_reduce"] * 2
    assert [e["collective_seq_id"] for e in recorders["nccl"]["entries"]] == [1, 2, 3, 4, 5]
    assert recorders["nccl"]["entries"][0]["frames"][0]["filename"] == "/job/gpu.py"
    assert recorders["gloo"]["entries"][0]["frames"][0]["filename"] == "/job/train.py"
    status = collectives.answer({"status": True}, environ)["recorders"]["nccl"]
    assert status["entries"] == [] and status["pg_status"]["0"]["last_enqueued_collective"] == "5"
    assert status["progress"] == {"last_record": 4, "last_done": 4}


def test_a_cpu_torch_has_the_generic_recorder_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch.distributed", fake_dist())
    monkeypatch.setitem(sys.modules, "torch._C._distributed_c10d", FakeRecorder(3))
    said = collectives.answer({"recorder": True}, {"TORCH_FR_BUFFER_SIZE": "256"})
    assert list(said["recorders"]) == ["gloo"]


def test_pydevd_answers_the_bridges_request_with_its_own_reader(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """debugpy's pydevd, as in a worker: the request is read by its JSON command processor
    and answered through its writer, a failure included."""
    from debugpy._vendored import vendored

    with vendored("pydevd"):  # pydevd's path, as debugpy gives it to a worker that listens
        from _pydevd_bundle._debug_adapter import pydevd_base_schema
        from _pydevd_bundle.pydevd_process_net_command_json import PyDevJsonCommandProcessor

        collectives.serve({"TORCH_FR_BUFFER_SIZE": "256"})
    sent: list[Any] = []
    py_db = types.SimpleNamespace(
        _main_lock=threading.RLock(),
        authentication=types.SimpleNamespace(is_authenticated=lambda: True),
        writer=types.SimpleNamespace(add_command=sent.append),
    )
    processor = PyDevJsonCommandProcessor(pydevd_base_schema.from_json)
    request = {"type": "request", "seq": 7, "command": COLLECTIVES,
               "arguments": {"recorder": True}}  # fmt: skip
    processor.process_net_command_json(py_db, json.dumps(request))
    [answer] = sent
    assert answer.as_dict["request_seq"] == 7 and answer.as_dict["success"] is True
    assert set(answer.as_dict["body"]) == {"identity", "job", "recorder", "recorders", "reason"}

    def broken(arguments: Any, environ: Any) -> Any:
        raise RuntimeError("torch moved")

    monkeypatch.setattr(collectives, "answer", broken)
    processor.process_net_command_json(py_db, json.dumps({**request, "seq": 8}))
    failed = sent[-1].as_dict
    assert (failed["request_seq"], failed["success"]) == (8, False)
    assert failed["message"] == "RuntimeError: torch moved"


REAL_RANKS = """
import json, os, sys, threading, time
from raydap.live import collectives
told = []
collectives.arm_recorder(os.environ)
collectives.watch_groups(told.append)  # before the job imports torch, as the hook runs
import torch, torch.distributed as dist
rank = int(sys.argv[1])
dist.init_process_group("gloo", init_method="tcp://127.0.0.1:" + sys.argv[2], rank=rank,
                        world_size=2)
dist.new_group([0, 1], group_desc="pair")
t = torch.ones(4)
dist.all_reduce(t)
if rank == 0:
    def read():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # until the main thread waits in all_reduce #2
            entries = collectives.answer({"recorder": True})["recorder"]["entries"]
            if entries and entries[-1]["collective_seq_id"] == 2:
                break
            time.sleep(0.05)
        answer = collectives.answer({"recorder": True, "frames": True})
        print(json.dumps({"told": told, "answer": answer}), flush=True)
        os._exit(0)
    threading.Thread(target=read).start()
    dist.all_reduce(t)  # rank 1 never comes
else:
    time.sleep(30)
"""


def test_real_gloo_ranks_say_who_they_are_and_their_recorder_while_one_waits() -> None:
    out = run_two_ranks(REAL_RANKS, reporter=0)
    said = json.loads(out)
    first, second = (told["identity"] for told in said["told"])  # init, then new_group
    assert (first["rank"], first["world_size"], len(first["groups"])) == (0, 2, 1)
    assert second["groups"][1] == {"name": "1", "desc": "pair", "spans": [[0, 2, 1]]}
    recorder = said["answer"]["recorder"]
    last = recorder["entries"][-1]
    assert (last["collective_seq_id"], last["profiling_name"], last["retired"]) == (
        2, "gloo:all_reduce", False,
    )  # fmt: skip
    assert any(f["filename"] == "<string>" for f in last["frames"])  # the call site


MESH_RANKS = """
import json, sys
from raydap.live import collectives
told = []
collectives.watch_groups(told.append)  # before the job imports torch, as the hook runs
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
rank = int(sys.argv[1])
dist.init_process_group("gloo", init_method="tcp://127.0.0.1:" + sys.argv[2], rank=rank,
                        world_size=2)
mesh = init_device_mesh("cpu", (2,), mesh_dim_names=("dp",))  # the world: no group of its own
print(json.dumps(told), flush=True)
dist.barrier()
"""


def test_a_dimension_as_large_as_the_world_is_named_by_the_mesh_torch_tells() -> None:
    """A 1-D ``dp`` mesh over both ranks makes no group (it reuses the default one): only
    torch's own account of the mesh names ``dp``, and the rank's coordinate along it."""
    from raydap.bridge.workers import meshes
    from raydap.protocol.collectives import Identity

    said = json.loads(run_two_ranks(MESH_RANKS, reporter=1))
    made, meshed = (Identity.model_validate(told["identity"]) for told in said)
    assert made.meshes == () and [g.desc for g in meshed.groups] == ["default_pg"]
    assert meshes.places(made) == ()  # the groups alone cannot say it
    [place] = meshes.places(meshed)
    [axis] = place.axes
    assert (axis.dim, axis.coord, axis.size, axis.group, axis.spans) == (
        "dp",
        1,
        2,
        "0",
        ((0, 2, 1),),
    )


@pytest.mark.parametrize(
    "ranks", [[0, 1, 2, 3], [0, 8, 16, 24], [3, 1], [5], [0, 2, 3, 4], [], list(range(10_000))]
)
def test_a_groups_ranks_travel_as_runs_in_their_order(ranks: list[int]) -> None:
    runs = collectives.spans(ranks)
    assert [rank for run in runs for rank in range(*run)] == ranks
    assert len(runs) <= max(1, len(ranks) // 2 + 1)
    assert collectives.spans(list(range(10_000))) == [[0, 10_000, 1]]


def test_the_job_is_asked_of_ray_only_inside_a_ray_worker() -> None:
    """Asking an uninitialized Ray for its runtime context starts a cluster (found the hard
    way: a test process started one, and its token file changed every later Ray head)."""
    asleep = types.SimpleNamespace(is_initialized=lambda: False, get_runtime_context=None)
    assert collectives.job_of(asleep) is None  # type: ignore[arg-type]
    context = types.SimpleNamespace(get_job_id=lambda: "02000000")
    worker = types.SimpleNamespace(is_initialized=lambda: True, get_runtime_context=lambda: context)
    assert collectives.job_of(worker) == "02000000"  # type: ignore[arg-type]
    assert collectives.job_of(None) is None
