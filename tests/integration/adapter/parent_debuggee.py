"""A stand-in for a live Ray worker that starts child processes: debugpy listens, and once the
file named by its first argument exists it starts one multiprocessing child (spawn, or fork)
per line of that file, each looping until the file named by its second argument exists."""

import multiprocessing
import os
import sys
import time

import debugpy


def child(index: int, done: str) -> None:
    while not os.path.exists(done):
        time.sleep(0.01)  # CHILD LOOP
    sys.exit(index)


def nested(index: int, done: str) -> None:
    """A child that starts a child of its own."""
    grandchild = multiprocessing.get_context("fork").Process(target=child, args=(index, done))
    grandchild.start()
    grandchild.join()


if __name__ == "__main__":
    go, done = sys.argv[1], sys.argv[2]
    host, port = debugpy.listen(("127.0.0.1", 0))
    print(port, flush=True)
    while not os.path.exists(go):
        time.sleep(0.01)
    with open(go) as chosen:
        methods = chosen.read().split()
    children = [
        multiprocessing.get_context("fork").Process(target=nested, args=(i, done))
        if method == "nested"
        else multiprocessing.get_context(method).Process(target=child, args=(i, done))
        for i, method in enumerate(methods, 1)
    ]
    for process in children:
        process.start()
    for process in children:
        process.join()
    print("exit codes", [p.exitcode for p in children], flush=True)
    while True:  # as a Ray worker does: it lives on for the next task
        time.sleep(0.1)
