# Right answer, and two threads of its own that spin whenever it has not been called for 2 ms: while the
# judge times the reference (and compares), so that the reference would look slower and the candidate
# faster. Expected for perf: pass, timing trusted: its process tree is frozen during the
# reference's blocks, where its CPU time stays at zero (every reference block's frozen_cpu_ms).
import threading
import time

import torch
import torch.distributed as dist

last_call = time.monotonic()
started = False


def spin_while_idle():
    while True:
        if time.monotonic() - last_call > 0.002:
            x = 0
            for _ in range(20000):
                x += 1
        else:
            time.sleep(0.0002)


def solution(tensor):
    global last_call, started
    last_call = time.monotonic()
    if not started:
        started = True
        for _ in range(2):
            threading.Thread(target=spin_while_idle, daemon=True).start()
    result = tensor.clone()
    dist.all_reduce(result)
    last_call = time.monotonic()
    return result
