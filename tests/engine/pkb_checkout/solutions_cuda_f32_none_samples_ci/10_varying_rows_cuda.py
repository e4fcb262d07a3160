import torch
import torch.distributed as dist


def solution(x: torch.Tensor) -> torch.Tensor:
    result = x.clone()
    dist.all_reduce(result)
    return result
