"""The job `raydap demo` runs: three workers that pause, then a check of the results.

- ``square``: a task paused at ``breakpoint()``;
- ``Accumulator.add``: an actor method paused at ``breakpoint()``;
- ``divide``: a task that raises ZeroDivisionError and, with RAY_DEBUG_POST_MORTEM=1, pauses
  post-mortem so the exception can be inspected before it propagates.

Exits 0 only if every result is right once the workers are continued.
"""

import sys

import ray


@ray.remote
def square(x: int) -> int:
    y = x * x
    breakpoint()  # paused: inspect x and y, then continue
    return y


@ray.remote
class Accumulator:
    def __init__(self) -> None:
        self.total = 0

    def add(self, k: int) -> int:
        self.total += k
        breakpoint()  # paused inside an actor method
        return self.total


@ray.remote(max_retries=0)
def divide(a: float, b: float) -> float:
    return a / b  # b == 0: post-mortem pause on ZeroDivisionError


def main() -> int:
    ray.init(runtime_env={"env_vars": {"RAY_DEBUG_POST_MORTEM": "1"}})
    accumulator = Accumulator.remote()  # type: ignore[attr-defined]
    paused = [square.remote(7), accumulator.add.remote(5)]
    failing = divide.remote(1, 0)  # all three run, and pause, at the same time
    results = ray.get(paused)
    try:
        ray.get(failing)
        failure = "none"
    except ray.exceptions.RayTaskError as exc:
        failure = type(exc.cause).__name__
    ok = results == [49, 5] and failure == "ZeroDivisionError"
    print(f"demo job results: {results}, divide raised {failure}: {'OK' if ok else 'WRONG'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
