"""P1: a task that pauses again and again, stamping the time just before each breakpoint()."""

import sys
import time

import ray

ray.init()


@ray.remote
def pause(times):
    for _ in range(times):
        stamp = time.time()  # noqa: F841 (read by the benchmark through the bridge)
        breakpoint()
    return times


print("RESULT", ray.get(pause.remote(int(sys.argv[1]))), flush=True)
