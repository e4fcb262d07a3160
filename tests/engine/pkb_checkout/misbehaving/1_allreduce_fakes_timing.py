# Right answer, slow (2 ms of sleep per call), and it rewrites its process's timer so that every sample
# it reports reads 1 us. Expected for perf: pass, with the warning that its per-call samples are not
# the block's: the speedup is the judge's clock around each block, which this process cannot touch.
import sys
import time

import torch
import torch.distributed as dist

for name in ("__main__", "pkbw_pkb_candidate"):
    module = sys.modules.get(name)
    if module is not None and hasattr(module, "Timer"):
        module.Timer.between = lambda self, a, b: 0.001


def solution(tensor):
    result = tensor.clone()
    dist.all_reduce(result)
    time.sleep(0.002)
    return result
