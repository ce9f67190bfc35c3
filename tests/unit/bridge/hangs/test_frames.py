from raydap.bridge.cluster.pyspy import Frame
from raydap.bridge.hangs.frames import fold, is_plumbing, wait_of

SITE = "/venv/lib/python3.11/site-packages"


def frame(function: str, path: str, line: int = 1, native: bool = False) -> Frame:
    return Frame(function=function, path=path, line=line, native=native)


WAITING = [  # innermost first, as py-spy reads a rank waiting on an event
    frame("wait", "/usr/lib/python3.11/threading.py", 327),
    frame("wait", "/usr/lib/python3.11/threading.py", 629),
    frame("wait_for_peers", "/job/train.py", 12),
    frame("actor_method_executor", f"{SITE}/ray/_private/function_manager.py", 726),
    frame("execute_task", "python/ray/_raylet.pyx", 2306),
    frame("main_loop", f"{SITE}/ray/_private/worker.py", 946),
    frame("<module>", f"{SITE}/ray/_private/workers/default_worker.py", 330),
]


def test_ray_and_python_frames_fold_but_not_where_the_rank_waits() -> None:
    shown = fold(WAITING)
    assert [(f.function, f.line) for f in shown] == [("wait", 327), ("wait", 629),
                                                     ("wait_for_peers", 12)]  # fmt: skip


def test_libraries_are_the_job_s_own_and_stay() -> None:
    torch = frame("all_reduce", f"{SITE}/torch/distributed/distributed_c10d.py", 2800)
    assert not is_plumbing(torch)
    assert fold([torch, *WAITING[2:]])[0] == torch


def test_a_stack_of_nothing_but_plumbing_is_kept_whole() -> None:
    assert fold(WAITING[3:]) == WAITING[3:]


def test_waits_are_named_collectives_first() -> None:
    native = frame("gloo::wait", "/venv/torch/lib/libtorch_cpu.so", 0, native=True)
    reduce = frame("all_reduce", f"{SITE}/torch/distributed/distributed_c10d.py", 2800)
    logger = frame("wrapper", f"{SITE}/torch/distributed/c10d_logger.py", 81)
    found = wait_of([native, reduce, logger, frame("step", "/job/train.py", 30)])
    assert found is not None and (found.kind, found.name) == ("collective", "all_reduce")
    event = wait_of(WAITING)
    assert event is not None and event.kind == "lock or event"
    assert wait_of([frame("compute", "/job/train.py", 40)]) is None
    queued = wait_of([frame("get", "/usr/lib/python3.11/queue.py", 171), WAITING[2]])
    assert queued is not None and queued.kind == "queue"
