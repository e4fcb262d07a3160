import torch
import torch.distributed as dist
import torch.distributed._symmetric_memory as symm_mem


def solution(tensor):
    buffer = symm_mem.empty(tensor.shape, dtype=tensor.dtype, device=tensor.device)
    handle = symm_mem.rendezvous(buffer, dist.group.WORLD)
    address = handle.multicast_ptr
    raise RuntimeError(f"never reached in CI: {address}")
