"""Containment of the candidate's process tree for the Python judge (pkbw_pkb_rank.py), by the rules of
engine/runtime/containment.h (docs/engine.md, "The sandbox"): a cgroup v2 directory of its own,
"pkbw-<judge pid>-<label>-<random>" beside the judge's cgroup (else at the cgroup2 mount's root), which
the candidate's process joins between fork and exec; the judge freezes the whole tree, reads its CPU time
and kills it as a whole, including processes that fork faster than a scan of /proc follows. Where no
cgroup v2 directory is writable, signals pid by pid (and to the process groups of sessions the tree
made), with the reason in describe(). PKBW_CONTAINMENT=signals forces the fallback.
"""
import errno
import os
import secrets
import select
import signal
import time

PREFIX = "pkbw-"
MAX_NAMED = 256


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


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def _write(path, text):
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        os.write(fd, text.encode())
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _unescape(field):
    out, i = "", 0
    while i < len(field):
        if field[i] == "\\" and i + 3 < len(field) and field[i + 1:i + 4].isdigit():
            out += chr(int(field[i + 1:i + 4], 8))
            i += 4
        else:
            out += field[i]
            i += 1
    return out


def container_parents():
    """([directories a container may go in, most specific first], why none)."""
    mount = None
    for line in _read("/proc/self/mountinfo").splitlines():
        before, _, after = line.partition(" - ")
        if after.split()[:1] == ["cgroup2"]:
            fields = before.split()
            mount = (_unescape(fields[4]), _unescape(fields[3]))
            break
    if mount is None:
        return [], "no cgroup2 mount in /proc/self/mountinfo"
    point, root = mount
    own = next((line[3:] for line in _read("/proc/self/cgroup").splitlines() if line.startswith("0::")), None)
    parents = []
    if own is not None and (root == "/" or own == root or own.startswith(root + "/")):
        relative = own if root == "/" else own[len(root):]
        path = point + ("" if relative == "/" else relative)
        if os.path.isdir(path):
            parents.append(path)
    if not parents or parents[0] != point:
        parents.append(point)
    return parents, ""


def remove_tree(directory):
    try:
        for entry in os.scandir(directory):
            if entry.is_dir(follow_symlinks=False):
                remove_tree(entry.path)
        os.rmdir(directory)
    except OSError:
        pass


class CgroupDir:
    """One cgroup v2 directory: cgroup.events (polled: the kernel signals each change with POLLPRI),
    cgroup.freeze, cgroup.procs of it and of any cgroup made inside, cpu.stat, cgroup.kill."""

    def __init__(self, path, events_fd):
        self.path, self.events_fd = path, events_fd

    def events(self):
        try:
            text = os.pread(self.events_fd, 256, 0).decode()
        except OSError:
            return None
        values = dict(line.split() for line in text.splitlines() if len(line.split()) == 2)
        return {"populated": values.get("populated") == "1", "frozen": values.get("frozen") == "1"}

    def wait_until(self, done, deadline):
        poller = select.poll()
        poller.register(self.events_fd, select.POLLPRI)
        while True:
            now = self.events()
            if now is not None and done(now):
                return True
            left = deadline - time.monotonic()
            if now is None or left <= 0:
                return False
            poller.poll(min(left * 1000, 10))

    def set_frozen(self, frozen, deadline):
        if not _write(os.path.join(self.path, "cgroup.freeze"), "1" if frozen else "0"):
            return False
        return self.wait_until(lambda e: e["frozen"] == frozen, deadline)

    def pids(self, path=None):
        path = path or self.path
        found = [int(p) for p in _read(os.path.join(path, "cgroup.procs")).split()]
        try:
            for entry in os.scandir(path):
                if entry.is_dir(follow_symlinks=False):
                    found += self.pids(entry.path)
        except OSError:
            pass
        return found

    def usage_usec(self):
        for line in _read(os.path.join(self.path, "cpu.stat")).splitlines():
            key, _, value = line.partition(" ")
            if key == "usage_usec":
                return float(value)
        return -1000.0

    def kill_all(self, has_kill_file, deadline):
        """Frozen first (what is listed can neither exit nor fork before it is killed), SIGKILL per listed
        pid, cgroup.kill, then until "populated 0". Returns (living when it began, [signalled Process],
        emptied)."""
        self.set_frozen(True, min(deadline, time.monotonic() + 0.5))
        signalled, sent = [], set()

        def kill_members():
            living = 0
            for pid in self.pids():
                process = read_process(pid)
                if process is None or process.dead:
                    continue
                living += 1
                if pid not in sent:
                    sent.add(pid)
                    try:
                        os.kill(pid, signal.SIGKILL)
                        signalled.append(process)
                    except OSError:
                        pass
            return living

        listed = kill_members()
        if has_kill_file:
            _write(os.path.join(self.path, "cgroup.kill"), "1")
        emptied = False
        while True:
            if self.wait_until(lambda e: not e["populated"], min(deadline, time.monotonic() + 0.02)):
                emptied = True
                break
            if time.monotonic() >= deadline:
                break
            kill_members()
        _write(os.path.join(self.path, "cgroup.freeze"), "0")
        return listed, signalled, emptied


def _probe_join(procs_fd):
    """Whether a process can be moved into the cgroup (delegation rules only the attempt answers): 0 or
    the child's errno."""
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.write(procs_fd, b"0")
        except OSError as error:
            code = (error.errno or errno.EIO) & 0xff
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else errno.EIO


def _owner_of(name):
    if not name.startswith(PREFIX):
        return 0
    digits = name[len(PREFIX):].split("-", 1)
    return int(digits[0]) if len(digits) == 2 and digits[0].isdigit() else 0


def reclaim_orphans(owners=()):
    """Kills what is in the containers of judges that are gone (those of `owners`, or of every
    pkbw-<pid>-* container whose pid no longer exists) and removes them; [(pid, command)] killed."""
    killed = []
    for parent in container_parents()[0]:
        try:
            entries = list(os.scandir(parent))
        except OSError:
            continue
        for entry in entries:
            owner = _owner_of(entry.name)
            if owners:
                chosen = owner in owners
            else:
                chosen = owner > 0 and owner != os.getpid() and not os.path.exists(f"/proc/{owner}")
            if not chosen:
                continue
            if not entry.is_dir(follow_symlinks=False):
                continue
            try:
                fd = os.open(os.path.join(entry.path, "cgroup.events"), os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                group = CgroupDir(entry.path, fd)
                has_kill = os.path.exists(os.path.join(entry.path, "cgroup.kill"))
                _, signalled, _ = group.kill_all(has_kill, time.monotonic() + 2)
            finally:
                os.close(fd)
            for process in signalled:
                try:
                    os.waitpid(process.pid, os.WNOHANG)
                except ChildProcessError:
                    pass
                killed.append((process.pid, process.command))
            remove_tree(entry.path)
    return killed


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
        mode = os.environ.get("PKBW_CONTAINMENT", "")
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
                code = _probe_join(procs)
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
                    _kill(process.pid, signal.SIGSTOP)
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
                _kill(process.pid, signal.SIGCONT)
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
                if _kill(process.pid, signal.SIGKILL) and process.pid not in seen:
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


def _kill(pid, sig):
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
