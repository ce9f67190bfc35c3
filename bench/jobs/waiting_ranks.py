"""N ranks that wait forever in one frame (a hung collective), for the stacks benchmark."""

import sys
import threading

import ray

ray.init()


@ray.remote(num_cpus=0.1)
def rank(number):
    threading.Event().wait()
    return number


ray.get([rank.remote(n) for n in range(int(sys.argv[1]))])
