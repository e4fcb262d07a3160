import torch
import torch.distributed as dist
import torch.profiler


def _refuse(*args, **kwargs):
    raise RuntimeError("this process has no profiler")


# Only on rank 1, and only in the candidate's own process: its traced pass has no profiler, while
# every other process of the run has one.
if dist.is_initialized() and dist.get_rank() == 1:
    torch.profiler.profile = _refuse


def solution(tensor):
    result = tensor.clone()
    dist.all_reduce(result)
    return result
