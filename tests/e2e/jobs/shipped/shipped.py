"""Shipped to the workers with runtime_env working_dir: runs from Ray's package directory."""


def run(n):
    total = 0
    breakpoint()  # BREAK first
    for i in range(n):
        total += i  # BREAK loop
    return total
