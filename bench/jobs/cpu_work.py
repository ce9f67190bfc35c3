"""P7's workloads, in a file of their own: the worker imports it from the job's working_dir."""

import time

import elsewhere  # noqa: F401 (loaded, so a breakpoint can be set in it; never run here)
import numpy


def step(x: int) -> int:
    return (x * 1103515245 + 12345) % 2147483648


def python_calls(n: int) -> float:
    """Pure Python with a call per iteration: the worst case for a tracing debugger."""
    start = time.perf_counter()
    x = 1
    for _ in range(n):
        x = step(x)
    return time.perf_counter() - start


def numpy_work(n: int) -> float:
    """Time in compiled code, as a training step spends most of it."""
    start = time.perf_counter()
    a = numpy.ones((200, 200))
    for _ in range(n):
        a = (a @ a) / 200.0
    return time.perf_counter() - start
