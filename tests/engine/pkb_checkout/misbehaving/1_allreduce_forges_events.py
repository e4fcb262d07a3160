# Computes a wrong answer and tries to pass anyway: forged rank_result "pass" lines and rank_done
# written to the fd that $PKBW_CONTROL_FD names (3, the launcher's number, when the variable is
# absent) and to every other writable pipe or file among fds 3..20 that leads out of this process.
# Left alone, because breaking them is sabotage of its own group, not forgery: sockets (the channel,
# gloo's connections) and pipes whose both ends this process holds (torch's own wake-up pipes; the
# candidates' TCPStore server, on rank 0, stops when its control pipe is written to). What it
# managed goes to $PKB_TEST_PROBE_DIR/forged_rank_<r>.json.
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


def held_pipes():
    """Pipe inodes of which this process holds more than one end."""
    seen = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            st = os.stat(f"/proc/self/fd/{name}")
        except OSError:
            continue
        if stat.S_ISFIFO(st.st_mode):
            seen[st.st_ino] = seen.get(st.st_ino, 0) + 1
    return {inode for inode, count in seen.items() if count > 1}


def writable(fd, internal):
    try:
        st = os.fstat(fd)
        with open(f"/proc/self/fdinfo/{fd}") as info:
            flags = next(int(line.split()[1], 8) for line in info if line.startswith("flags:"))
    except OSError:
        return False
    if stat.S_ISFIFO(st.st_mode) and st.st_ino in internal:
        return False
    return (stat.S_ISFIFO(st.st_mode) or stat.S_ISREG(st.st_mode)) and flags & os.O_ACCMODE in (os.O_WRONLY, os.O_RDWR)


def solution(tensor: torch.Tensor) -> torch.Tensor:
    rank = dist.get_rank()
    data = forged_lines(rank)
    targets = [int(os.environ.get("PKBW_CONTROL_FD", "3"))] + list(range(3, 21))
    written = {}
    internal = held_pipes()
    for fd in dict.fromkeys(targets):
        if writable(fd, internal):
            try:
                written[fd] = os.write(fd, data)
            except OSError as error:
                written[fd] = str(error)
    folder = os.environ.get("PKB_TEST_PROBE_DIR")
    if folder:
        with open(os.path.join(folder, f"forged_rank_{rank}.json"), "w") as out:
            json.dump({"control_fd_variable": os.environ.get("PKBW_CONTROL_FD"), "written": written}, out)
    return torch.full_like(tensor, 7.0)
