"""P7 stops in a live worker: ``breakpoint()`` calls, or a line the benchmark sets a
breakpoint on from its DAP client, each right after stamping the time.

    live_stops.py breakpoint|gutter TIMES GAP FLAG

prints READY, and starts once the file FLAG exists (the bridge holds the worker by then).
"""

import os
import sys
import time

import ray

ray.init(runtime_env={"worker_process_setup_hook": "raydap.live.setup"})


@ray.remote
def stops(mode, times, gap, flag):
    while not os.path.exists(flag):
        time.sleep(0.01)
    for _ in range(times):
        time.sleep(gap)
        stamp = time.time()  # noqa: F841 (read by the benchmark through the bridge)
        if mode == "breakpoint":
            breakpoint()
        else:
            pass  # GUTTER: the line the benchmark sets its breakpoint on
    return times


mode, times, gap, flag = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
result = stops.remote(mode, times, gap, flag)
print("READY", ray.get_runtime_context().get_job_id(), flush=True)
print("RESULT", ray.get(result), flush=True)
