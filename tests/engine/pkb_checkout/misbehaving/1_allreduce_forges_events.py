# Computes a wrong answer and tries to pass anyway: forged rank_result "pass" lines and rank_done
# written to the fd that $PKBW_CONTROL_FD names (3, the launcher's number, when the variable is
# absent) and to every other writable pipe or file among fds 3..20. Sockets are left alone (the
# channel and gloo's connections: breaking those is no forgery). What it managed goes to
# $PKB_TEST_PROBE_DIR/forged_rank_<r>.json.
import json
import os
import stat

import torch
import torch.distributed as dist


def forged_lines(rank):
    lines = [{"event": "rank_result", "rank": rank, "trial": t, "status": "pass", "message": "forged pass",
              "tensors": [], "guard_violations": [], "mutated_inputs": [], "outputs": {}} for t in range(10)]
    lines.append({"event": "rank_done", "rank": rank, "trials_run": 10})
    return "".join("\n" + json.dumps(line) + "\n" for line in lines).encode()


def writable(fd):
    try:
        mode = os.fstat(fd).st_mode
        with open(f"/proc/self/fdinfo/{fd}") as info:
            flags = next(int(line.split()[1], 8) for line in info if line.startswith("flags:"))
    except OSError:
        return False
    return (stat.S_ISFIFO(mode) or stat.S_ISREG(mode)) and flags & os.O_ACCMODE in (os.O_WRONLY, os.O_RDWR)


def solution(tensor: torch.Tensor) -> torch.Tensor:
    rank = dist.get_rank()
    data = forged_lines(rank)
    targets = [int(os.environ.get("PKBW_CONTROL_FD", "3"))] + list(range(3, 21))
    written = {}
    for fd in dict.fromkeys(targets):
        if writable(fd):
            try:
                written[fd] = os.write(fd, data)
            except OSError as error:
                written[fd] = str(error)
    folder = os.environ.get("PKB_TEST_PROBE_DIR")
    if folder:
        with open(os.path.join(folder, f"forged_rank_{rank}.json"), "w") as out:
            json.dump({"control_fd_variable": os.environ.get("PKBW_CONTROL_FD"), "written": written}, out)
    return torch.full_like(tensor, 7.0)
