import ctypes

import torch
import torch.distributed as dist


def solution(tensor):
    if dist.get_rank() == 1:
        ctypes.string_at(0)  # SIGSEGV: the candidate's process dies, its judge reports it
    result = tensor.clone()
    dist.all_reduce(result)
    return result
