"""Inputs of the miniature checkout, with PKB's signature. Seeded per rank and trial so that a
candidate which skips its peers is wrong everywhere."""
import torch


def create_input_tensor(rank, world_size, problem_id, base_shape, dtype, trial=0, device=None):
    generator = torch.Generator().manual_seed(7 + 1000 * problem_id + 17 * rank + 100003 * trial)
    return (torch.randn(base_shape, generator=generator).to(dtype=dtype, device=device),)
