"""runport's batch on a Ray cluster (docs/batch.md): ``ray_batch`` takes ``run_batch``'s
arguments and shards the rows over Ray tasks, each running the async batch on its shard; the
driver writes the one output file, so lines, resume and summary are the local engine's.
"""

from runport.ray._engine import ray_batch, start_ray

__all__ = ["ray_batch", "start_ray"]
