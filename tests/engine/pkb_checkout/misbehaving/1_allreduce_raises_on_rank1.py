import torch
import torch.distributed as dist


def solution(tensor):
    if dist.get_rank() == 1:
        raise RuntimeError("rank 1 refuses")
    result = tensor.clone()
    dist.all_reduce(result)
    return result
