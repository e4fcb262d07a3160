#!/usr/bin/env python3
"""The Python judge's containment (engine/python/pkbw_containment.py, with pkbw_cgroup.py and
pkbw_processes.py), as tests/runtime/test_containment.cpp checks the native one: freeze and thaw of a
busy tree, its CPU time, a kill that names only what existed, and a fork bomb that forks and exits every
~0.1 ms, gone after kill_all; in cgroup v2 where this machine has a writable one (skipped with the
reason where not) and through the signals fallback (PKBW_CONTAINMENT=signals). Needs no torch. Also the
judge's own use: pkbw_pkb_worker.Candidate in its container and
pkbw_pkb_rank_resources.Resources.release killing what its process left.
"""
import ctypes
import os
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "engine", "python"))
import pkbw_cgroup as cgroup  # noqa: E402
import pkbw_containment as containment  # noqa: E402
import pkbw_processes as processes  # noqa: E402

PR_SET_CHILD_SUBREAPER = 36

# A busy root; children that print their pid and spin (one in a session of its own), and one that exits
# at once. Every process ends by itself after `life` seconds.
TREE = r"""
import os, sys, time
life = float(sys.argv[1])
def spin():
    end = time.monotonic() + life
    while time.monotonic() < end:
        pass
    os._exit(0)
for i in range(int(sys.argv[2])):
    if os.fork() == 0:
        if i == 1:
            os.setsid()
        os.write(1, f"{os.getpid()}\n".encode())  # one write: the lines of several processes do not mix
        if i == 2:
            os._exit(0)
        spin()
os.write(1, f"root {os.getpid()}\n".encode())
spin()
"""

# The root starts a process that forks and exits every ~0.1 ms under the name argv[3] (comm), each
# generation appending a byte to the file argv[1] (its heartbeat); ten seconds of life at most.
BOMB = r"""
import ctypes, os, sys, time
heart, own_session, marker = sys.argv[1], sys.argv[2] == "1", sys.argv[3]
end = time.monotonic() + 10
if os.fork():
    while time.monotonic() < end:
        pass
    os._exit(0)
if own_session:
    os.setsid()
ctypes.CDLL(None).prctl(15, marker.encode(), 0, 0, 0)
fd = os.open(heart, os.O_WRONLY | os.O_APPEND)
while time.monotonic() < end:
    os.write(fd, b"x")
    time.sleep(0.0001)
    if os.fork():
        os._exit(0)
os._exit(0)
"""


def beating(heart, within=8.0):
    """Whether the heartbeat file grows, waited for (a loaded machine starts Python slowly)."""
    deadline = time.monotonic() + within
    first = None
    while time.monotonic() < deadline:
        size = os.path.getsize(heart)
        if first is None and size > 0:
            first = size
        elif first is not None and size > first:
            return True
        time.sleep(0.02)
    return False


def named(marker):
    """Living processes whose comm is `marker`, anywhere on the machine."""
    found = []
    for process in processes.all_processes():
        try:
            with open(f"/proc/{process.pid}/comm") as f:
                if f.read().strip() == marker and not process.dead:
                    found.append(process.pid)
        except OSError:
            pass
    return found


def sweep(marker):
    """After a failure: kill what carries the marker until none is seen."""
    end = time.monotonic() + 3
    while time.monotonic() < end:
        left = named(marker)
        for pid in left:
            processes.send_signal(pid, 9)
        processes.reap_zombie_children(-1)
        if not left:
            time.sleep(0.1)
            if not named(marker):
                return


class Base:
    MODE = None

    def setUp(self):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        os.environ["PKBW_CONTAINMENT"] = self.MODE
        self.container = containment.ProcessContainer("pytest")
        if self.MODE == "auto" and self.container.method != "cgroup v2":
            self.skipTest(f"no writable cgroup v2 here: {self.container.describe()}")
        self.processes = []

    def tearDown(self):
        self.container.close()
        for process in self.processes:
            if process.stdout:
                process.stdout.close()
            if process.poll() is None:
                process.kill()
            process.wait()
        processes.reap_zombie_children(-1)
        os.environ.pop("PKBW_CONTAINMENT", None)

    def start(self, script, *args):
        process = subprocess.Popen([sys.executable, "-c", script, *map(str, args)], stdout=subprocess.PIPE,
                                   text=True, preexec_fn=self.container.join_in_child)
        self.processes.append(process)
        self.container.set_root(process.pid)
        for _ in range(200):
            if process.pid in [pid for pid, _ in self.container.members()]:
                return process
            time.sleep(0.005)
        self.fail(f"the root {process.pid} never appeared in the container")

    def test_freeze_stops_a_busy_tree_and_thaw_resumes_it(self):
        process = self.start(TREE, 10, 0)
        self.assertTrue(process.stdout.readline().startswith("root"))
        process.stdout.close()
        time.sleep(0.1)
        self.assertTrue(self.container.freeze(2000), self.container.describe())
        if self.container.method == "cgroup v2":
            with open(os.path.join(self.container.directory, "cgroup.events")) as f:
                self.assertIn("frozen 1", f.read())
        else:
            self.assertTrue(processes.read_process(process.pid).stopped)
        before, tree = processes.process_cpu_ms(process.pid), self.container.cpu_ms()
        time.sleep(0.15)
        self.assertLess(processes.process_cpu_ms(process.pid) - before, 2.0, "the frozen process ran")
        self.assertLess(self.container.cpu_ms() - tree, 2.0)
        self.assertTrue(self.container.thaw(2000))
        before = processes.process_cpu_ms(process.pid)
        time.sleep(0.3)
        self.assertGreater(processes.process_cpu_ms(process.pid) - before, 20.0, "the thawed process did not run")
        report = self.container.kill_all(2000)
        self.assertTrue(report.all_gone)
        self.assertEqual(process.wait(5), -9)

    def test_cpu_grows_with_the_tree_and_kill_names_only_what_existed(self):
        process = self.start(TREE, 10, 3)
        started = set()
        for _ in range(4):
            line = process.stdout.readline().split()
            started.add(int(line[-1]))
        process.stdout.close()
        time.sleep(0.05)
        before = self.container.cpu_ms()
        time.sleep(0.3)
        self.assertGreater(self.container.cpu_ms() - before, 50.0, "three busy processes for 300 ms")
        report = self.container.kill_all(2000)
        self.assertTrue(report.all_gone)
        self.assertEqual(report.survivors, [])
        self.assertEqual(report.count_before, 3)  # the one that exited is neither counted nor named
        killed = {pid for pid, _ in report.named}
        self.assertEqual(len(killed), 3)
        self.assertTrue(killed <= started, f"named {killed - started}, which never ran in the tree")
        for pid in killed:
            self.assertFalse(processes.alive(pid))
        self.assertEqual(self.container.members(), [])

    def test_a_fork_bomb_in_its_own_session_is_gone_after_kill_all(self):
        marker = f"pkbwpybomb{os.getpid() % 10000}"
        with tempfile.NamedTemporaryFile() as heart:
            try:
                self.start(BOMB, heart.name, 1, marker)
                self.assertTrue(beating(heart.name), "the fork bomb did not start")
                report = self.container.kill_all(3000)
                self.assertTrue(report.all_gone, f"survivors: {report.survivors}")
                beats = os.path.getsize(heart.name)
                for scan in range(6):
                    self.assertEqual(named(marker), [], f"scan {scan} found the fork bomb alive")
                    time.sleep(0.05)
                self.assertEqual(os.path.getsize(heart.name), beats, "the fork bomb still runs")
            finally:
                sweep(marker)


# A candidate's process that leaves a sleeper in a session of its own and waits.
LEAVES_A_SLEEPER = r"""
import os, time
if os.fork() == 0:
    os.setsid()
    os.execvp("sleep", ["sleep", "30"])
time.sleep(30)
"""


class JudgeRelease:
    def test_the_judge_kills_its_candidates_tree_through_the_container(self):
        from pkbw_pkb_rank_resources import Resources
        from pkbw_pkb_worker import Candidate  # imports no torch
        resources = Resources()
        candidate = resources.candidate = Candidate([], [sys.executable, "-c", LEAVES_A_SLEEPER],
                                                    dict(os.environ), "cand-r9")
        self.assertIn(self.MODE_TEXT, candidate.container.describe())
        for _ in range(200):
            sleepers = [pid for pid, command in candidate.container.members() if command == "sleep 30"]
            if sleepers:
                break
            time.sleep(0.01)
        self.assertEqual(len(sleepers), 1)
        self.assertTrue(candidate.freeze(2000))
        self.assertTrue(candidate.thaw(2000))
        self.assertGreaterEqual(candidate.tree_cpu_ms(), 0)
        directory = candidate.container.directory
        left = resources.release()
        self.assertEqual(left.killed, [(sleepers[0], "sleep 30")])  # not the candidate's own process
        self.assertEqual(left.count, 1)
        self.assertEqual(left.escaped, [])
        self.assertFalse(processes.alive(sleepers[0]))
        self.assertEqual(candidate.process.returncode, -9)
        if directory:
            self.assertFalse(os.path.exists(directory))
        self.assertEqual(resources.release().count, 0)  # once

    def test_the_reference_timing_worker_is_neither_in_the_candidates_tree_nor_a_leftover(self):
        from pkbw_pkb_rank_resources import Resources
        from pkbw_pkb_worker import Candidate
        resources = Resources()
        candidate = resources.candidate = Candidate([], [sys.executable, "-c", LEAVES_A_SLEEPER],
                                                    dict(os.environ), "cand-r9")
        # (the worker's argv ends in --channel-fd N, which python -c leaves in sys.argv)
        worker = resources.reference = Candidate([], [sys.executable, "-c", "import time; time.sleep(30)"],
                                                 dict(os.environ), "ref-r9", subtree=True)
        try:
            candidate.container.exclude(worker.pid)
            for _ in range(200):
                sleepers = [pid for pid, command in candidate.container.members() if command == "sleep 30"]
                if sleepers:
                    break
                time.sleep(0.01)
            self.assertEqual(len(sleepers), 1)
            self.assertNotIn(worker.pid, [pid for pid, _ in candidate.container.members()])
            self.assertEqual([pid for pid, _ in worker.container.members()], [worker.pid])
            # Freezing the candidate's tree leaves the worker running.
            self.assertTrue(candidate.freeze(2000))
            self.assertFalse(processes.read_process(worker.pid).stopped)
            self.assertTrue(candidate.thaw(2000))
        finally:
            left = resources.release()
        self.assertEqual(left.killed, [(sleepers[0], "sleep 30")])
        self.assertEqual(left.count, 1)
        self.assertEqual(worker.process.returncode, -9)
        self.assertFalse(processes.alive(sleepers[0]))


class CgroupContainment(Base, JudgeRelease, unittest.TestCase):
    MODE = "auto"
    MODE_TEXT = "cgroup v2"

    def test_the_directory_goes_with_close_and_a_stale_one_is_reclaimed(self):
        directory = self.container.directory
        self.assertTrue(os.path.isdir(directory))
        self.container.close()
        self.assertFalse(os.path.exists(directory))
        gone = os.fork()
        if gone == 0:
            os._exit(0)
        os.waitpid(gone, 0)
        stale = os.path.join(os.path.dirname(directory), f"pkbw-{gone}-stale-0")
        os.mkdir(stale)
        sleeper = subprocess.Popen(["sleep", "30"])
        self.processes.append(sleeper)
        with open(os.path.join(stale, "cgroup.procs"), "w") as f:
            f.write(str(sleeper.pid))
        killed = cgroup.reclaim_orphans([gone])
        self.assertEqual([pid for pid, _ in killed], [sleeper.pid])
        self.assertFalse(processes.alive(sleeper.pid))
        self.assertFalse(os.path.exists(stale))


class SignalsContainment(Base, JudgeRelease, unittest.TestCase):
    MODE = "signals"
    MODE_TEXT = "signals (no writable cgroup v2: PKBW_CONTAINMENT=signals)"

    def test_the_fallback_says_why(self):
        self.assertEqual(self.container.method, "signals")
        self.assertIn("PKBW_CONTAINMENT=signals", self.container.describe())
        self.assertIn("may escape", self.container.describe())
        os.environ["PKBW_CONTAINMENT"] = "cgroups-please"
        unknown = containment.ProcessContainer("unknown")
        self.assertIn("PKBW_CONTAINMENT=cgroups-please is not one of auto, signals", unknown.describe())


if __name__ == "__main__":
    unittest.main(verbosity=2)
