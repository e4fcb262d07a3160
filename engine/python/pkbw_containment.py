"""Containment of the candidate's process tree for the Python judge (pkbw_pkb_rank.py), by the rules of
engine/runtime/containment.h (docs/engine.md, "The sandbox"): a cgroup v2 directory of its own,
"pkbw-<judge pid>-<label>-<random>" beside the judge's cgroup (else at the cgroup2 mount's root), which
the candidate's process joins between fork and exec; the judge freezes the whole tree, reads its CPU time
and kills it as a whole, including processes that fork faster than a scan of /proc follows. Where no
cgroup v2 directory is writable, signals pid by pid (and to the process groups of sessions the tree
made), with the reason in describe(). PKBW_CONTAINMENT=signals forces the fallback.

The processes as /proc shows them are pkbw_processes.py's, the cgroup directories pkbw_cgroup.py's.
"""
import os
import secrets
import signal
import time

from pkbw_cgroup import PREFIX, CgroupDir, container_parents, probe_join, reclaim_orphans, remove_tree
from pkbw_pkb_contract import ENV_CONTAINMENT
from pkbw_processes import (
    alive, all_processes, below, process_cpu_ms, read_process, reap_zombie_children, send_signal
)

MAX_NAMED = 256


class KillReport:
    def __init__(self):
        self.named = []      # [(pid, command)]: each was running, was signalled, and is gone
        self.count_before = 0
        self.all_gone = False
        self.survivors = []  # [(pid, command)] still running
        # Signals only: process groups of sessions the tree made, killed whole, in which no process was
        # seen alive (a forker's living process is the one a scan misses): each held at least one.
        self.groups = []


class ProcessContainer:
    """See the module's docstring. create: ProcessContainer(label); never raises for lack of cgroups.
    subtree: without cgroups the tree is the root and what lies below it, not everything below this
    process (a trusted worker's container: the candidate's orphans, which come back to this process,
    are not its)."""

    def __init__(self, label, subtree=False):
        self.method, self.directory, self.why = "signals", "", ""
        self._procs_fd = self._events_fd = None
        self._has_kill = False
        self.root = -1
        self.frozen = False
        self.subtree = subtree
        self._not_ours = set()
        mode = os.environ.get(ENV_CONTAINMENT, "")
        if mode == "signals":
            self.why = "PKBW_CONTAINMENT=signals"
            return
        if mode not in ("", "auto"):
            self.why = f"PKBW_CONTAINMENT={mode[:40]} is not one of auto, signals"
            return
        reclaim_orphans()
        parents, why = container_parents()
        reasons = [why] if why else []
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in label[:32]) or "tree"
        for parent in parents:
            failure = self._place(os.path.join(parent, f"{PREFIX}{os.getpid()}-{safe}-{secrets.token_hex(4)}"))
            if not failure:
                return
            reasons.append(failure)
        self.why = "; ".join(reasons) or "no cgroup2 mount"

    def _place(self, directory):
        try:
            os.mkdir(directory, 0o755)
        except OSError as error:
            return f"mkdir {directory}: {error.strerror}"
        procs = events = None
        failure = ""
        try:
            if not os.path.exists(os.path.join(directory, "cgroup.freeze")):
                failure = f"{directory} has no cgroup.freeze (Linux 5.2 or later)"
            else:
                procs = os.open(os.path.join(directory, "cgroup.procs"), os.O_WRONLY | os.O_CLOEXEC)
                events = os.open(os.path.join(directory, "cgroup.events"), os.O_RDONLY | os.O_CLOEXEC)
                code = probe_join(procs)
                if code:
                    failure = f"cannot move a process into {directory}: {os.strerror(code)}"
        except OSError as error:
            failure = f"cannot open {directory}/cgroup.procs or cgroup.events: {error.strerror}"
        if failure:
            for fd in (procs, events):
                if fd is not None:
                    os.close(fd)
            remove_tree(directory)
            return failure
        self.method, self.directory = "cgroup v2", directory
        self._procs_fd, self._events_fd = procs, events
        self._has_kill = os.path.exists(os.path.join(directory, "cgroup.kill"))
        return ""

    def describe(self):
        if self.method == "cgroup v2":
            return f"cgroup v2 ({self.directory}): frozen and killed as a whole"
        return (f"signals (no writable cgroup v2: {self.why}): each process stopped and killed by pid; "
                "a process that forks faster than the scan may escape")

    def join_in_child(self):
        """For preexec_fn, between fork and exec: the child moves itself into the cgroup."""
        if self._procs_fd is not None:
            os.write(self._procs_fd, b"0")

    def set_root(self, pid):
        self.root = pid
        if self.method == "signals":
            self._not_ours |= {p.pid for p in all_processes() if p.ppid == os.getpid() and p.pid != pid}

    def exclude(self, pid):
        """Without cgroups: a child of this process started after the root (another worker), left out of
        the tree with what lies below it."""
        self._not_ours.add(pid)

    def _group(self):
        return CgroupDir(self.directory, self._events_fd)

    def _scan(self):
        """(living processes of the tree, process groups of sessions the tree made) for the fallback. The
        tree: every living process below this one (the judge is the subreaper of what the root leaves)
        except children it had before the root and those excluded (a subtree container's: the root and
        what lies below it). The groups, learnt from the living and from this process's zombies, are
        safe to signal whole: every process of such a session descends from the tree's process that
        made it."""
        if self.root <= 0:
            return [], set()
        processes = all_processes()
        if self.subtree:
            living = [p for p in processes if p.pid == self.root and not p.dead] + below(processes, self.root)
            parent = self.root
        else:
            living = below(processes, os.getpid(), self._not_ours)
            parent = os.getpid()
        mine = os.getsid(0)
        groups = {p.group for p in living if p.session not in (0, mine) and p.group > 1}
        groups |= {p.group for p in processes if p.dead and p.ppid == parent and p.pid not in self._not_ours
                   and p.session not in (0, mine) and p.group > 1}
        return living, groups

    @staticmethod
    def _signal_groups(groups, sig):
        """Signals each group; forgets the empty ones so that a reused id is never signalled. Returns the
        groups signalled."""
        signalled = set()
        for group in list(groups):
            try:
                os.killpg(group, sig)
                signalled.add(group)
            except ProcessLookupError:
                groups.discard(group)
            except OSError:
                pass
        return signalled

    def freeze(self, timeout_ms):
        self.frozen = True
        deadline = time.monotonic() + timeout_ms / 1000
        if self.method == "cgroup v2":
            return self._group().set_frozen(True, deadline)
        previous, first = None, True
        while True:
            living, groups = self._scan()
            self._signal_groups(groups, signal.SIGSTOP)
            now = {p.pid for p in living}
            for process in living:
                if not process.stopped:
                    send_signal(process.pid, signal.SIGSTOP)
            if all(p.stopped for p in living) and (now == previous or (first and not now)):
                return True
            previous, first = now, False
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.001)

    def thaw(self, timeout_ms):
        self.frozen = False
        deadline = time.monotonic() + timeout_ms / 1000
        if self.method == "cgroup v2":
            return self._group().set_frozen(False, deadline)
        while True:
            living, groups = self._scan()
            self._signal_groups(groups, signal.SIGCONT)
            stopped = [p for p in living if p.stopped]
            if not stopped:
                return True
            for process in stopped:
                send_signal(process.pid, signal.SIGCONT)
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.001)

    def cpu_ms(self):
        """CPU time of the whole tree so far: cgroup v2's cpu.stat keeps what exited processes used; the
        fallback sums the living only."""
        if self.method == "cgroup v2":
            return self._group().usage_usec() / 1000
        return sum(max(process_cpu_ms(p.pid), 0.0) for p in self._scan()[0])

    def members(self):
        if self.method == "cgroup v2":
            found = [read_process(pid) for pid in self._group().pids()]
            return [(p.pid, p.command) for p in found if p is not None and not p.dead]
        return [(p.pid, p.command) for p in self._scan()[0]]

    def kill_all(self, timeout_ms):
        report = KillReport()
        deadline = time.monotonic() + timeout_ms / 1000
        if self.method == "cgroup v2":
            listed, signalled, emptied = self._group().kill_all(self._has_kill, deadline)
            report.count_before, report.all_gone = listed, emptied
            reap_zombie_children(self.root)
            if not emptied:
                report.survivors = self.members()
        else:
            signalled = self._kill_signals(report, deadline)
        self.frozen = False
        report.named = [(p.pid, p.command) for p in signalled if not alive(p.pid)][:MAX_NAMED]
        return report

    def _kill_signals(self, report, deadline):
        signalled, seen, groups, groups_killed, first = [], set(), set(), set(), True
        while True:
            living, found_groups = self._scan()
            if first:
                report.count_before, first = len(living), False
            groups |= found_groups
            # Zombies keep a group signallable: reaped first, a group that takes the signal had a living
            # process in it.
            reap_zombie_children(self.root)
            groups_killed |= self._signal_groups(groups, signal.SIGKILL)
            for process in living:
                if send_signal(process.pid, signal.SIGKILL) and process.pid not in seen:
                    seen.add(process.pid)
                    signalled.append(process)
            reap_zombie_children(self.root)
            if (not living and not groups) or time.monotonic() >= deadline:
                break
            time.sleep(0.001)
        reap_zombie_children(self.root)
        survivors = {pid: command for pid, command in self.members()}
        for process in all_processes():
            if not process.dead and process.group in groups:
                survivors.setdefault(process.pid, process.command)
        report.survivors = list(survivors.items())
        report.all_gone = not survivors
        report.groups = sorted(groups_killed - {p.group for p in signalled})
        return signalled

    def close(self, timeout_ms=2000):
        """Kills what is left and removes the cgroup's directory (idempotent)."""
        if self.method == "cgroup v2" or self.root > 0:
            self.kill_all(timeout_ms)
        if self.method == "cgroup v2":
            remove_tree(self.directory)
        for fd in (self._procs_fd, self._events_fd):
            if fd is not None:
                os.close(fd)
        self._procs_fd = self._events_fd = None
        self.method, self.directory, self.root = "signals", "", -1
        self.why = self.why or "closed"
