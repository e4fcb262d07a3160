#!/usr/bin/env python3
"""Crash safety: SIGKILL the pkbw CLI or one rank at random points of host runs into one store.

Usage: kill9.py --pkbw BIN [--iterations 15] [--seed N] [--cache DIR] [--budget 75]

After each kill: PRAGMA integrity_check is ok; no rank of the run is left (pids from `hello`, and any
process whose command line names the run's config); a killed rank makes the run `crash` naming that
rank (or `pass` when the kill landed after its last result: teardown); a killed CLI leaves its run
`running` until the next pkbw marks it `aborted`, and its shared memory is removed by then. At the
end a normal run passes, no run is left `running` and no /dev/shm/pkbw-*-p<killed pid>-* remains.
"""
import argparse
import glob
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))


class Run:
    """pkbw --json in the background; events are collected as they arrive."""

    def __init__(self, pkbw, args):
        self.proc = subprocess.Popen([pkbw] + args + ["--json"], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.events = []
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            with self.lock:
                self.events.append(event)

    def find(self, name):
        with self.lock:
            return [e for e in self.events if e.get("event") == name]

    def wait(self, timeout):
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"pkbw did not end within {timeout} s")
        self.reader.join(5)
        return code


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1][0] != "Z"
    except OSError:
        return False


def processes_naming(text):
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if text.encode() in f.read() and alive(int(entry)):
                        found.append(int(entry))
            except OSError:
                pass
    return found


def integrity(store):
    db = sqlite3.connect(store, timeout=10)
    try:
        return db.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        db.close()


def query(store, sql, args=()):
    db = sqlite3.connect(store, timeout=10)
    try:
        return db.execute(sql, args).fetchall()
    finally:
        db.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pkbw", required=True)
    parser.add_argument("--iterations", type=int, default=15)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--cache")
    parser.add_argument("--budget", type=float, default=75, help="seconds for the kill loop")
    options = parser.parse_args()
    rng = random.Random(options.seed)
    print(f"seed {options.seed}")
    failures = []
    killed_cli = []  # (pkbw pid, run id or None)
    with tempfile.TemporaryDirectory(prefix="pkbw-kill9-") as work:
        store = os.path.join(work, "runs.db")
        cache = options.cache or os.path.join(work, "cache")
        common = ["--backend", "host", "--nproc", "2", "--dtype", "f32", "--store", store, "--cache-dir", cache]
        slow = os.path.join(HERE, "support", "slow_allreduce.cpp")
        args = ["eval", "--problem", "1_allreduce", "--solution", slow, "--trials", "4"] + common
        # Warm the compile cache so that kills land in runs, not in the compiler.
        warm = Run(options.pkbw, args[:5] + ["--trials", "1"] + common)
        if warm.wait(120) != 0:
            failures.append("the warm-up run failed")
        start = time.monotonic()
        for i in range(options.iterations):
            if time.monotonic() - start > options.budget:
                print(f"budget of {options.budget} s spent after {i} iterations")
                break
            target = rng.choice(["cli", "rank0", "rank1"])
            delay = rng.uniform(0.05, 1.6)
            run = Run(options.pkbw, args)
            t0 = time.monotonic()
            note = ""
            if target == "cli":
                time.sleep(delay)
                started = run.find("run_started")
                run.proc.send_signal(signal.SIGKILL)
                run.wait(30)
                run_id = started[0]["run_id"] if started else None
                run_dir = started[0]["run_dir"] if started else None
                killed_cli.append((run.proc.pid, run_id))
                pids = [e["pid"] for e in run.find("hello")]
                deadline = time.monotonic() + 3
                while time.monotonic() < deadline and (any(alive(p) for p in pids) or
                                                        (run_dir and processes_naming(run_dir))):
                    time.sleep(0.05)
                left = [p for p in pids if alive(p)] + (processes_naming(run_dir) if run_dir else [])
                if left:
                    failures.append(f"iteration {i}: ranks {left} outlived the killed CLI")
                note = f"run {run_id}, {len(pids)} rank(s) had said hello"
            else:
                rank = int(target[-1])
                pid = None
                while time.monotonic() - t0 < delay or pid is None:
                    hellos = [e for e in run.find("hello") if e.get("rank") == rank]
                    if hellos:
                        pid = hellos[0]["pid"]
                    if run.proc.poll() is not None or time.monotonic() - t0 > 20:
                        break
                    time.sleep(0.01)
                done_before = any(e.get("rank") == rank for e in run.find("rank_done"))
                hit = False  # the kill reached a rank still running (not one already exited)
                if pid is not None and alive(pid):
                    try:
                        os.kill(pid, signal.SIGKILL)
                        hit = True
                    except ProcessLookupError:
                        pass
                code = run.wait(60)
                finished = (run.find("run_finished") or [{}])[-1]
                status, message = finished.get("status"), finished.get("message", "")
                named = f"rank {rank} crashed with SIGKILL"
                if status == "crash" and named in message:
                    rows = query(store, "SELECT outcome FROM rank_results WHERE run_id = ? AND rank = ?",
                                 (finished.get("run_id"), rank))
                    if ("crash",) not in rows:
                        failures.append(f"iteration {i}: no crash row for rank {rank}: {rows}")
                elif status == "pass" and (not hit or done_before or named in message):
                    pass  # the kill landed after the rank's last result (teardown) or after it exited
                else:
                    failures.append(f"iteration {i}: killed rank {rank} (pid {pid}) gave {status} exit {code}: "
                                    f"{message[:300]}")
                pids = [e["pid"] for e in run.find("hello")]
                left = [p for p in pids if alive(p)]
                if left:
                    failures.append(f"iteration {i}: ranks {left} left after the run")
                note = f"{status} exit {code}"
            check = integrity(store)
            if check != "ok":
                failures.append(f"iteration {i}: integrity_check {check}")
            print(f"iteration {i:2d}: kill {target:5s} at {delay:.2f} s: {note} "
                  f"({time.monotonic() - t0:.1f} s)", flush=True)

        # The next pkbw marks the killed CLIs' runs aborted and removes their shared memory.
        final = Run(options.pkbw, args[:5] + ["--trials", "1"] + common)
        code = final.wait(120)
        finished = (final.find("run_finished") or [{}])[-1]
        if code != 0 or finished.get("status") != "pass":
            failures.append(f"final run: {finished.get('status')} exit {code}: {finished.get('message', '')[:300]}")
        for pid, run_id in killed_cli:
            if run_id is not None:
                rows = query(store, "SELECT status, summary FROM runs WHERE id = ?", (run_id,))
                # A kill that landed after the run's end leaves its real status.
                if not rows or rows[0][0] == "running":
                    failures.append(f"run {run_id} of the killed CLI {pid} is {rows}")
                elif rows[0][0] == "aborted" and "writer process" not in rows[0][1]:
                    failures.append(f"run {run_id} aborted without the note: {rows[0][1]}")
            segments = glob.glob(f"/dev/shm/pkbw-*-p{pid}-*")
            if segments:
                failures.append(f"shared memory of the killed CLI {pid} left: {segments}")
        running = query(store, "SELECT id FROM runs WHERE status = 'running'")
        if running:
            failures.append(f"runs left running: {running}")
        check = integrity(store)
        if check != "ok":
            failures.append(f"final integrity_check {check}")
        aborted = query(store, "SELECT count(*) FROM runs WHERE status = 'aborted'")[0][0]
        print(f"{len(killed_cli)} CLI kill(s), {aborted} run(s) aborted; {time.monotonic() - start:.1f} s")
    for f in failures:
        print("FAIL: " + f)
    print("ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
