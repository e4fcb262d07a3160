# Right answer; the first call leaves a daemon behind (double fork, setsid: out of the process group
# and past the death signal), whose pid goes to $PKB_TEST_PROBE_DIR/daemon_rank_<r>.pid.
import os
import time

import torch
import torch.distributed as dist

started = False


def solution(tensor):
    global started
    if not started:
        started = True
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                folder = os.environ.get("PKB_TEST_PROBE_DIR")
                if folder:
                    with open(os.path.join(folder, f"daemon_rank_{dist.get_rank()}.pid"), "w") as out:
                        out.write(str(os.getpid()))
                time.sleep(600)
            os._exit(0)
        os.wait()
    result = tensor.clone()
    dist.all_reduce(result)
    return result
