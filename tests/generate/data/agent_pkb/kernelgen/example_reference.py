import torch


def solution(x: torch.Tensor) -> torch.Tensor:
    return x * 2
