"""Inputs for the miniature checkout, with PKB's signature (rank, world, problem id, base shape,
dtype, trial, device). Problem 1 uses constants like PKB's collectives; problem 9 is seeded per
rank and trial so that trials differ; problem 10's row count changes with the trial."""
import torch


def create_input_tensor(rank, world_size, problem_id, base_shape, dtype, trial=0, device=None):
    if problem_id == 1:
        return (torch.full(base_shape, float(rank + 1), dtype=dtype, device=device),)
    if problem_id == 9:
        generator = torch.Generator().manual_seed(42 + problem_id * 1000 + rank + trial * 1_000_003)
        x = torch.randn(base_shape, generator=generator).to(dtype=dtype, device=device)
        return (x, 0.5)
    if problem_id == 10:
        generator = torch.Generator().manual_seed(42 + problem_id * 1000 + rank + trial * 1_000_003)
        rows = base_shape[0] + trial % 3
        return (torch.randn((rows, base_shape[1]), generator=generator).to(dtype=dtype, device=device),)
    return (torch.full(base_shape, float(rank + 1), dtype=dtype, device=device),)
