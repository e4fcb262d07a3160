import torch
import torch.distributed as dist


def solution(tensor):
    result = tensor.clone()
    dist.all_reduce(result)
    if dist.get_rank() == 1:
        result[0, 3] += 1.0
    return result
