"""A verl-style colocated worker group: actors named as verl names them
(``<prefix>WorkerDict_<pool>:<rank>``), each hosting several roles whose methods are
``<role>_<method>``. Both ranks run the actor's method until the file $VERL_GO exists, then
stop in the critic's."""

import os
import time

import ray

ray.init()
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)


@ray.remote(num_cpus=0.25)
class WorkerDict:
    def __init__(self, rank):
        self.rank = rank

    def actor_update_policy(self, go):
        while not os.path.exists(go):
            time.sleep(0.05)  # BREAK actor
        return self.rank

    def critic_compute_values(self):
        values = [self.rank] * 3  # noqa: F841 (looked at in the debugger)
        breakpoint()  # BREAK critic
        return self.rank * 10


group = [WorkerDict.options(name=f"JNzEwcWorkerDict_0:{r}").remote(r) for r in range(2)]
ray.get([w.actor_update_policy.remote(os.environ["VERL_GO"]) for w in group])
print("RESULT", ray.get([w.critic_compute_values.remote() for w in group]), flush=True)
