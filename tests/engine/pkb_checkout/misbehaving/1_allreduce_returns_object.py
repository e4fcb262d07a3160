# The right tensor beside a value that cannot be described to the judge (an arbitrary object): the
# candidate's process refuses to send it, and the run is invalid_output naming output_1.
import torch
import torch.distributed as dist


def solution(tensor):
    result = tensor.clone()
    dist.all_reduce(result)
    return result, object()
