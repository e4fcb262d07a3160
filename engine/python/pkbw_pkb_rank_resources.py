"""PKB's Python judge: what one rank must release whatever its run returns or raises (Resources): the
workers' processes, the sandboxes' directories, and anything the candidate's process left behind,
accounted for as Leftovers.
"""

import os
import signal
import time

from pkbw_processes import all_processes, below


def kill_descendants(root):
    """SIGKILLs every descendant of root and reaps those re-parented to it; [(pid, command)]. The judge
    is a child subreaper, so whatever the candidate's process started, in any session, is here: the
    second sweep after the candidate's container, for a process that left it."""
    killed = []
    for process in below(all_processes(), root):
        try:
            os.kill(process.pid, signal.SIGKILL)
            killed.append((process.pid, process.command or "?"))
        except OSError:
            pass
    deadline = time.monotonic() + 2
    while killed and time.monotonic() < deadline:
        try:
            reaped, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if reaped == 0:
            time.sleep(0.01)
    return killed


class Leftovers:
    """What was left of the candidate's tree besides its own process."""

    def __init__(self, killed=(), count=0, escaped=(), groups=()):
        self.killed = list(killed)    # [(pid, command)]: each was running and is gone
        self.count = count            # processes found left, at least (killed may name fewer)
        self.escaped = list(escaped)  # [(pid, command)] still running: they could not be killed
        self.groups = list(groups)    # process groups killed whole, none of their processes seen


class Resources:
    """What main() must release whatever run() returns or raises: the workers' processes and anything
    the candidate's left behind."""
    candidate = None
    reference = None  # the reference's timing worker

    def __init__(self):
        self.sandboxes = []  # the workers' sandboxes: their directories go once their processes are gone

    def sandbox(self, sandbox):
        self.sandboxes.append(sandbox)
        return sandbox

    def release(self):
        """Kills the reference's timing worker with its container's tree (trusted: nothing it leaves is
        reported), then the candidate's process, its container's tree, then (a second sweep) anything
        below the judge; removes the containers and the sandboxes' directories. Leftovers, the
        candidate's own process not counted."""
        try:
            return self.release_processes()
        finally:
            for sandbox in self.sandboxes:
                sandbox.close()

    def release_processes(self):
        if self.reference is not None:
            reference, self.reference = self.reference, None
            reference.container.close()  # while its tree still hangs below it (the fallback's scan)
            reference.kill()
        if self.candidate is None:
            return Leftovers()
        candidate, self.candidate = self.candidate, None
        candidate.kill()
        report = candidate.container.kill_all(3000)
        killed = [(pid, command) for pid, command in report.named if pid != candidate.pid]
        swept = [(pid, command) for pid, command in kill_descendants(os.getpid()) if pid != candidate.pid]
        candidate.container.close()
        count = max(report.count_before, len(killed)) + len(report.groups) + len(swept)
        return Leftovers(killed + swept, count, report.survivors, report.groups)


def listed_processes(processes):
    """[(pid, command)] as the candidate's finished event lists them: at most 32 (a fork bomb's count
    is in leftover_count), each command cut to 200 characters."""
    return [{"pid": pid, "command": command[:200]} for pid, command in processes[:32]]
