# Sums by gathering every rank's tensor and adding them up locally.
import torch
import torch.distributed as dist


def solution(tensor: torch.Tensor) -> torch.Tensor:
    parts = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, tensor)
    return torch.stack(parts).sum(dim=0)
