# Right answer, slow (2 ms of sleep per call), and it rewrites its process's timer so that every sample
# it reports reads 1 us. Expected for perf: pass, with the warning that its per-call samples are not
# the block's: the speedup is the judge's clock around each block, which this process cannot touch.
import sys
import time

import torch
import torch.distributed as dist

# The worker's Timer lives in pkbw_pkb_timed_loops (it was in the candidate's own script, __main__, before).
patched = False
for name in ("__main__", "pkbw_pkb_candidate", "pkbw_pkb_timed_loops"):
    module = sys.modules.get(name)
    if module is not None and hasattr(module, "Timer"):
        module.Timer.between = lambda self, a, b: 0.001
        patched = True
if not patched:
    # Loud rather than an honest candidate in disguise: the test's warning would then come from nothing.
    raise RuntimeError("no Timer found to fake: the test no longer attempts its attack")


def solution(tensor):
    result = tensor.clone()
    dist.all_reduce(result)
    time.sleep(0.002)
    return result
