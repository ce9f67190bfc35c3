"""P1: a task that pauses again and again, stamping the time just before each breakpoint().

    pauses.py TIMES GAP

waits GAP seconds before each pause: longer than the bridge's detach grace (5 s) means each
pause must be discovered afresh; 0 means it arrives on the connection the bridge still holds.
"""

import sys
import time

import ray

ray.init()


@ray.remote
def pause(times, gap):
    for _ in range(times):
        time.sleep(gap)
        stamp = time.time()  # noqa: F841 (read by the benchmark through the bridge)
        breakpoint()
    return times


print("RESULT", ray.get(pause.remote(int(sys.argv[1]), float(sys.argv[2]))), flush=True)
