# An honest all-reduce that also reports, to $PKB_TEST_PROBE_DIR/rank_<r>.json, what its process can
# see: its pid and parent's, whether pkbw's control-pipe and token variables reached it, and where
# its file descriptors lead (tests/engine/pkb_python.sh checks that it is not the judge).
import json
import os

import torch
import torch.distributed as dist


def solution(tensor: torch.Tensor) -> torch.Tensor:
    folder = os.environ.get("PKB_TEST_PROBE_DIR")
    if folder:
        fds = {}
        for name in os.listdir("/proc/self/fd"):
            try:
                fds[name] = os.readlink(f"/proc/self/fd/{name}")
            except OSError:
                pass
        report = {"pid": os.getpid(), "ppid": os.getppid(),
                  "environment": sorted(k for k in os.environ if k.startswith("PKBW_")),
                  "fds": fds, "modules": sorted(m for m in __import__("sys").modules if "reference" in m)}
        with open(os.path.join(folder, f"rank_{dist.get_rank()}.json"), "w") as out:
            json.dump(report, out)
    result = tensor.clone()
    dist.all_reduce(result)
    return result
