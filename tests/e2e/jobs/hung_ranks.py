import threading

import ray

ray.init()
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)


def wait_for_peers(rank):
    arrived = threading.Event()
    waiting_rank = rank  # noqa: F841 (read in the debugger)
    arrived.wait()  # BREAK wait (a line marked for the test)
    return rank


def compute(rank):
    total = 0
    while True:
        total = (total + rank) % 1000  # BREAK compute


@ray.remote(num_cpus=0.5)
def rank(number):
    if number == 2:
        return compute(number)
    return wait_for_peers(number)


refs = [rank.remote(n) for n in range(3)]
print("STARTED", flush=True)
print("RESULT", ray.get(refs), flush=True)
