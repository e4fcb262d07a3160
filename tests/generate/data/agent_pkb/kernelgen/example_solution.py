import torch


def solution(x: torch.Tensor) -> torch.Tensor:
    return torch.add(x, x)
