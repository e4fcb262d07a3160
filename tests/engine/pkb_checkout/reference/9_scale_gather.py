"""Scales the local tensor, gathers every rank's row sums; returns a tuple with a non-tensor leaf."""
import torch
import torch.distributed as dist


def solution(x: torch.Tensor, alpha: float):
    scaled = x * alpha
    sums = scaled.sum(dim=1)
    gathered = [torch.empty_like(sums) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, sums)
    return scaled, torch.stack(gathered), x.shape
