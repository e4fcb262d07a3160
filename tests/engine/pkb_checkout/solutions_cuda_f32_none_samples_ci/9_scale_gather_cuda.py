import torch
import torch.distributed as dist


def solution(x, alpha):
    sums = x.sum(dim=1) * alpha
    parts = [torch.empty_like(sums) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, sums)
    return x * alpha, torch.stack(parts), x.shape
