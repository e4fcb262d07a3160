"""Processes as /proc shows them, for the Python judge's containment of its candidate's tree
(pkbw_containment.py): each one's state, parent, group, session and command line, the tree below a
process, CPU time per process, and the reaping of the zombies the judge inherits as a subreaper.
"""
import os


class Process:
    __slots__ = ("pid", "ppid", "state", "group", "session", "command")

    def __init__(self, pid, ppid, state, group, session, command):
        self.pid, self.ppid, self.state, self.group, self.session, self.command = (
            pid, ppid, state, group, session, command)

    @property
    def dead(self):
        return self.state in ("Z", "X")

    @property
    def stopped(self):
        return self.state in ("T", "t")


def read_process(pid):
    """/proc/<pid>'s state, parent, group, session and command line; None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode(errors="replace")
        close = stat.rindex(")")
        fields = stat[close + 2:].split()
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            command = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except (OSError, ValueError):
        return None
    comm = stat[stat.index("(") + 1:close]
    if not command:
        command = comm
    elif not os.path.basename(command.split(" ")[0]).startswith(comm):
        command += f" [{comm}]"  # renamed itself (PR_SET_NAME) without exec
    try:
        return Process(pid, int(fields[1]), fields[0], int(fields[2]), int(fields[3]), command)
    except (IndexError, ValueError):
        return None


def all_processes():
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            process = read_process(int(name))
            if process is not None:
                found.append(process)
    return found


def below(processes, root, skip=()):
    """The living processes below root (root excluded); `skip`: children of root left out with their
    subtrees."""
    children = {}
    for process in processes:
        if not process.dead:
            children.setdefault(process.ppid, []).append(process)
    found, frontier, seen = [], [root], {root}
    while frontier:
        parent = frontier.pop()
        for child in children.get(parent, []):
            if (parent == root and child.pid in skip) or child.pid in seen:
                continue
            seen.add(child.pid)
            found.append(child)
            frontier.append(child.pid)
    return found


def alive(pid):
    process = read_process(pid) if pid > 0 else None
    return process is not None and not process.dead


def reap_zombie_children(keep):
    """Reaps this process's zombie children except `keep` (its starter waits for it). The judge is a
    subreaper: every process of the candidate's tree that exits after its parent becomes its zombie."""
    children = set()
    try:
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/children") as f:
                children.update(int(pid) for pid in f.read().split())
    except (OSError, ValueError):
        children = {p.pid for p in all_processes() if p.ppid == os.getpid()}
    for pid in children - {keep}:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass


def send_signal(pid, sig):
    """True when the signal was sent (the process may be gone, or not ours to signal)."""
    try:
        os.kill(pid, sig)
        return True
    except OSError:
        return False


def process_cpu_ms(pid):
    """CPU time of every thread of a process so far (schedstat), or -1 when it cannot be read."""
    total = 0
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return -1.0
    return total / 1e6
