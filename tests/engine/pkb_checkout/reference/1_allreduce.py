import torch
import torch.distributed as dist


def solution(tensor: torch.Tensor) -> torch.Tensor:
    result = tensor.clone()
    dist.all_reduce(result)
    return result
