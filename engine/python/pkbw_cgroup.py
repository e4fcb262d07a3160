"""cgroup v2 directories for the Python judge's containment (pkbw_containment.py): where a container may
go (beside the judge's own cgroup, else at the cgroup2 mount's root), one directory frozen, measured and
killed as a whole, and the reclaiming of containers whose judge is gone.
"""
import errno
import os
import select
import signal
import time

from pkbw_processes import read_process

PREFIX = "pkbw-"


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


def probe_join(procs_fd):
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
