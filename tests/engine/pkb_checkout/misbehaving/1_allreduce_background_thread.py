# Right answer, and a thread that keeps computing after every call has returned (work the timed
# calls do not see): the judge's idle window after each timed block finds the CPU time.
import threading

import torch
import torch.distributed as dist


def spin():
    x = 0
    while True:
        x += 1


threading.Thread(target=spin, daemon=True).start()


def solution(tensor):
    result = tensor.clone()
    dist.all_reduce(result)
    return result
