"""Two live Ray actors in one gloo group with a short collective timeout (TIMEOUT s, set by
the job: 6), training step after step while rank 0 stops. Rank 0 reads the phase the test writes
in STATE_DIR/phase and broadcasts it, so both ranks take each step in the same phase:

- ``run``: a step;
- ``break``: a step where rank 0 calls ``breakpoint()``;
- ``end``: both return.

A conditional breakpoint on the line between the broadcast and the all_reduce stops rank 0
only, while rank 1 waits in the all_reduce. Each rank
writes its group's timeout in STATE_DIR/timeout-RANK before every step (what raydap set), and
returns its steps, the sum it all_reduced and its longest wait in a collective, or how its
wait ended. PLAN=plain starts in ``break`` (nobody attached) and returns rank 1 only."""

import datetime
import os
import time
from pathlib import Path

import ray

from raydap.bridge.client.ports import free_port  # the master's port, taken by no lane meanwhile

ray.init(runtime_env={"worker_process_setup_hook": "raydap.live.setup"})
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)
TIMEOUT = 6
STATE = Path(os.environ["STATE_DIR"])
PHASES = ["run", "break", "end"]


@ray.remote(num_cpus=0.25)
class Rank:
    def __init__(self, rank, port):
        import torch.distributed as dist

        # Joined with a long timeout (a busy machine may start one rank's process seconds
        # after the other's), then given the group's short one for every collective.
        dist.init_process_group(
            "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2,
            timeout=datetime.timedelta(seconds=120),
        )  # fmt: skip
        dist.distributed_c10d._set_pg_timeout(datetime.timedelta(seconds=TIMEOUT))
        self.rank = rank

    def timeout(self):
        import torch
        import torch.distributed as dist

        group = dist.distributed_c10d._get_default_group()
        return group._get_backend(torch.device("cpu")).options._timeout.total_seconds()

    def phase(self):
        if self.rank != 0:
            return "run"
        try:
            return (STATE / "phase").read_text().strip()
        except FileNotFoundError:
            return "run"

    def train(self):
        steps, total, longest = 0, 0.0, 0.0
        while True:
            (STATE / f"timeout-{self.rank}.new").write_text(str(self.timeout()))
            (STATE / f"timeout-{self.rank}.new").rename(STATE / f"timeout-{self.rank}")
            outcome = self.step()  # BREAK step
            if outcome is None:
                return {"rank": self.rank, "steps": steps, "total": total, "longest": longest}
            if "error" in outcome:
                return {"rank": self.rank, "steps": steps, **outcome}
            steps += 1
            total += outcome["grad"]
            longest = max(longest, outcome["waited"])
            time.sleep(0.05)

    def step(self):
        import torch
        import torch.distributed as dist

        phase = torch.tensor([PHASES.index(self.phase())])
        dist.broadcast(phase, 0)
        phase = PHASES[int(phase)]
        if phase == "end":
            return None
        grad = torch.ones(1) * (self.rank + 1)  # BREAK grad
        if phase == "break" and self.rank == 0:
            breakpoint()
        started = time.monotonic()
        try:
            dist.all_reduce(grad)
        except RuntimeError as exc:
            return {"failed_after": time.monotonic() - started, "error": str(exc)[:300],
                    "timeout_then": self.timeout()}  # fmt: skip
        return {"grad": float(grad), "waited": time.monotonic() - started}


port = free_port()
ranks = [Rank.remote(rank, port) for rank in range(2)]
if os.environ.get("PLAN") == "plain":
    (STATE / "phase").write_text("break")
    trained = [r.train.remote() for r in ranks]
    try:
        print("RESULT", ray.get(trained[1]), flush=True)
    except ray.exceptions.RayError as exc:  # rank 1's process died: say how
        print("RESULT", {"died": str(exc)[-600:]}, flush=True)
else:
    print("RESULT", ray.get([r.train.remote() for r in ranks]), flush=True)
