import torch
import torch.distributed as dist

calls = 0


def solution(tensor):
    # Right on its one trial, then raises on rank 1 in the traced pass (its second call).
    global calls
    calls += 1
    if calls > 1 and dist.get_rank() == 1:
        raise RuntimeError("rank 1 refuses to be traced")
    result = tensor.clone()
    dist.all_reduce(result)
    return result
