from raydap.bridge.cluster.pyspy import Frame
from raydap.bridge.hangs.stack_tree import innermost_first, merge


def frames(*where: tuple[str, int]) -> list[Frame]:
    """Innermost first, as DAP reports them."""
    return [Frame(function=f, path=f"/job/{f}.py", line=line) for f, line in where]


def test_identical_paths_merge_and_diverging_frames_branch() -> None:
    waiting = frames(("wait", 30), ("step", 12), ("main", 3))
    tree = merge({
        "r0": waiting, "r1": waiting,
        "r2": frames(("compute", 50), ("step", 14), ("main", 3)),
    })  # fmt: skip
    assert tree.workers == ["r0", "r1", "r2"]
    [main] = tree.children  # the outermost frame is shared by all three
    assert (main.function, main.line, main.workers) == ("main", 3, ["r0", "r1", "r2"])
    waiting_branch, computing = main.children  # largest group first
    assert (waiting_branch.function, waiting_branch.line) == ("step", 12)
    assert waiting_branch.workers == ["r0", "r1"]
    assert [c.function for c in waiting_branch.children] == ["wait"]
    assert (computing.line, computing.workers) == (14, ["r2"])
    assert computing.children[0].children == []


def test_the_same_function_on_another_line_is_another_branch() -> None:
    tree = merge({"a": frames(("step", 12)), "b": frames(("step", 13))})
    assert sorted(c.line for c in tree.children) == [12, 13]


def test_no_workers_no_branches() -> None:
    assert merge({}).children == [] and merge({}).workers == []


def test_debugpy_and_py_spy_frames_of_one_line_merge_under_the_fuller_name() -> None:
    held = [Frame(function="main_loop", path="/ray/worker.py", line=1069)]
    running = [Frame(function="Worker.main_loop", path="/ray/worker.py", line=1069)]
    tree = merge({"paused": held, "running": running})
    [only] = tree.children
    assert only.function == "Worker.main_loop" and only.workers == ["paused", "running"]


def test_a_post_mortem_stack_is_turned_innermost_first() -> None:
    """debugpy lists the catching frame, then the traceback outermost first."""
    listed = [
        Frame(function="execute_task (Current frame)", path="/ray/_raylet.pyx", line=2198),
        Frame(function="execute_task", path="/ray/_raylet.pyx", line=2306),
        Frame(function="divide", path="/job/demo.py", line=36),
    ]
    assert [(f.function, f.line) for f in innermost_first(listed)] == [
        ("divide", 36),
        ("execute_task", 2306),
        ("execute_task", 2198),
    ]
    assert innermost_first(listed[1:]) == listed[1:]  # an ordinary stop is left as it is
