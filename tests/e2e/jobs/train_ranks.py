import ray
from ray.train import ScalingConfig
from ray.train.v2.api.data_parallel_trainer import DataParallelTrainer

ray.init()
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)


def train_loop(config):
    breakpoint()  # BREAK train_loop


DataParallelTrainer(train_loop, scaling_config=ScalingConfig(num_workers=2)).fit()
print("RESULT trained", flush=True)
