# Right answer during the eval; after it, each call gathers the ranks' tensors and leaves the sum to a
# thread of its own, returning a tensor that the thread fills in a few milliseconds later (as a kernel
# left running past the call would); the next call waits for the previous thread. Expected for perf:
# invalid_timing, "a timed call's output failed its check": the worker copies each call's output into
# its slot as the call returns, before the thread has written it.
import threading
import time

import torch
import torch.distributed as dist

calls = 0
pending = None


def finish(result, parts):
    time.sleep(0.002)
    result.copy_(torch.stack(parts).sum(dim=0))


def solution(tensor):
    global calls, pending
    calls += 1
    if pending is not None:
        pending.join()
    parts = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, tensor)
    if calls <= 3:  # the eval's trials (at most 3 in the tests)
        return torch.stack(parts).sum(dim=0)
    result = torch.zeros_like(tensor)
    pending = threading.Thread(target=finish, args=(result, parts))
    pending.start()
    return result
