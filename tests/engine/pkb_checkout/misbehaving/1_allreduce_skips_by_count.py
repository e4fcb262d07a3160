# Counts its calls; after the eval's (at most 3 in the tests) it computes one call of three and answers
# the other two with its last result, cheaply. The same count on every rank, so the collectives still
# match. Expected for perf: invalid_timing, "a timed call's output failed its check (N of M calls)":
# every timed call reads fresh inputs, and each call's output is checked.
import torch
import torch.distributed as dist

calls = 0
last = None


def solution(tensor):
    global calls, last
    calls += 1
    if calls > 3 and calls % 3 != 0 and last is not None:
        return last
    last = tensor.clone()
    dist.all_reduce(last)
    return last
