#!/usr/bin/env python3
"""Runs one adversarial host candidate through the real `pkbw` CLI and checks its diagnosis.

Usage: run_case.py --pkbw BIN --case NAME [--cases cases.json] [--cache DIR] [--samples DIR]

Checks (docs/engine.md "Adversarial candidates"): the run's status and exit code (a case with known_hole, a hole pkbw does not close yet, is
skipped with exit 77 and its line printed); the message names
the culprit rank and phase; the store's rank row for the culprit; no rank process left (pids from
the `hello` events); no /dev/shm/pkbw-*-p<pkbw pid>-* segment and no pkbw-candidate-<judge pid>-*
temporary directory of the run's judges left; the store is not locked
(BEGIN IMMEDIATE with no wait) and PRAGMA integrity_check is ok; the next run of a good candidate
on the same store passes. A case with no_process_named: no process anywhere on the host carries that
name (comm) after the run, alive or newly forked.
"""
import argparse
import glob
import json
import os
import re
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def run_pkbw(pkbw, args, timeout, env=None):
    """Runs pkbw --json (with `env` added to the environment); returns (exit code, events, stderr, seconds,
    pid)."""
    start = time.monotonic()
    proc = subprocess.Popen([pkbw] + args + ["--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=dict(os.environ, **(env or {})))
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"pkbw did not end within {timeout} s")
    events = []
    for line in out.decode(errors="replace").splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            pass
    return proc.returncode, events, err.decode(errors="replace"), time.monotonic() - start, proc.pid


def check_held_to_judge_clock(perf, factor, failures):
    """A candidate that slows its own process's clock gains nothing: every one of its blocks was raised to
    the judge's floor, and its reported time is its own samples' median times at least `factor` (what the
    judge's clock says over what the forged clock says). A ratio of two figures from the same run, not a
    speedup: load slows the reference and the candidate differently, never the forged clock's factor."""
    pkbw = perf.get("pkbw") or {}
    blocks, floored = pkbw.get("candidate_blocks"), pkbw.get("floored_blocks")
    if not isinstance(blocks, int) or blocks < 1 or floored != blocks:
        failures.append(f"{floored} of {blocks} candidate blocks raised to the judge's floor, expected all")
    reported = ((perf.get("sides") or {}).get("candidate") or {}).get("median_ms")
    own = (((perf.get("call_samples") or {}).get("candidate")) or {}).get("median_ms")
    if isinstance(reported, (int, float)) and isinstance(own, (int, float)) and own > 0:
        print(f"  held: candidate {reported:.4f} ms a call, its own samples {own:.4f} ms: {reported / own:.2f}x")
    if not isinstance(reported, (int, float)) or not isinstance(own, (int, float)) or own <= 0 \
            or reported < factor * own:
        failures.append(f"candidate's time {reported} ms a call against its own samples' {own} ms, expected "
                        f"at least {factor}x theirs (the judge's clock, not its own)")


def landlock_available():
    """Whether the kernel offers Landlock (landlock_create_ruleset with LANDLOCK_CREATE_RULESET_VERSION)."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1)) > 0


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie is dead for our purpose only if it is not a pkbw-rank still running.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1][0] != "Z"
    except OSError:
        return False


def check_leftovers(events, pkbw_pid, failures):
    pids = [e["pid"] for e in events if e.get("event") == "hello" and isinstance(e.get("pid"), int)]
    deadline = time.monotonic() + 2.0
    while any(pid_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [p for p in pids if pid_alive(p)]
    if left:
        failures.append(f"rank processes left running: {left}")
    segments = glob.glob(f"/dev/shm/pkbw-*-p{pkbw_pid}-*")
    if segments:
        failures.append(f"shared memory left: {segments}")
    # The candidate processes' own directories, named after their judges (a judge that re-raises its
    # candidate's signal removes its own first; the launcher removes those of the judges it killed).
    # Those this run's judges announced (each candidate event's sandbox names its directory) are the
    # ones to look for: a name glob over the judges' pids also found, under a parallel ctest, a
    # directory of another test's judge that had been given one of this run's dead judges' pids (the
    # pid space is 32768 here; such directories carried Python's 8-character mkdtemp suffix, where
    # this run's judges are pkbw-rank). The glob stays for runs that announce none (no sandbox).
    announced = set()
    for event in events:
        if event.get("event") == "candidate":
            announced.update(re.findall(r"/\S*/pkbw-candidate-\d+-[A-Za-z0-9_]+", json.dumps(event)))
    if announced:
        directories = sorted(d for d in announced if os.path.exists(d))
    else:
        directories = [d for p in pids for d in glob.glob(os.path.join(tempfile.gettempdir(), f"pkbw-candidate-{p}-*"))]
    if directories:
        failures.append(f"candidate directories left: {directories}")
    return pids


def processes_named(name):
    """{pid: state} of every process whose comm is `name`, zombies included."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        if stat[stat.index("(") + 1:stat.rindex(")")] == name:
            found[int(entry)] = stat[stat.rindex(")") + 2]
    return found


def check_none_named(name, failures):
    """No process called `name` runs on the host: none found alive, and no new pid with that name appears
    for half a second (one that forks and exits every 0.1 ms can be missed by one scan, not by its
    stream of new pids). What is found is killed, so that a failing run leaves nothing behind."""
    first = set(processes_named(name))
    living, new = set(), set()
    for _ in range(10):
        now = processes_named(name)
        living |= {pid for pid, state in now.items() if state not in "ZX"}
        new |= set(now) - first
        time.sleep(0.05)
    if living or new:
        failures.append(f"processes named {name} still run after the run: {len(living)} alive, {len(new)} new pid(s)")
        deadline = time.monotonic() + 3
        while processes_named(name) and time.monotonic() < deadline:
            for pid, state in processes_named(name).items():
                if state not in "ZX":
                    try:
                        os.kill(pid, 9)
                    except OSError:
                        pass
            time.sleep(0.01)


def check_trace(pkbw, store, run_id, case, nproc, failures):
    """The run's stored trace, as `pkbw export --format chrome-trace` writes it: no text of trace_lacks
    anywhere, and trace_reference_iterations iteration ranges reference/<i> on every rank (the
    judges' own trace)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as exported:
        done = subprocess.run([pkbw, "export", str(run_id), "--store", store, "--format", "chrome-trace",
                               "-o", exported.name], capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            failures.append(f"pkbw export of run {run_id} failed: {done.stderr[-300:]}")
            return
        text = open(exported.name, errors="replace").read()
    for secret in case.get("trace_lacks", []):
        if secret in text:
            failures.append(f"the stored trace contains '{secret}'")
    if "trace_reference_iterations" in case:
        events = json.loads(text)["traceEvents"]
        per_rank = {}
        for e in events:
            if re.fullmatch(r"reference/\d+", str(e.get("name", ""))) and "iteration" in str(e.get("cat", "")):
                per_rank[e.get("pid")] = per_rank.get(e.get("pid"), 0) + 1
        expected = {r: case["trace_reference_iterations"] for r in range(nproc)}
        if per_rank != expected:
            failures.append(f"reference iterations stored per rank {per_rank}, expected {expected}")


def check_store(store, run_id, failures):
    db = sqlite3.connect(store, timeout=0)
    try:
        integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
        if integrity != "ok":
            failures.append(f"integrity_check: {integrity}")
        try:
            db.execute("BEGIN IMMEDIATE")
            db.execute("ROLLBACK")
        except sqlite3.OperationalError as error:
            failures.append(f"store still locked: {error}")
        row = db.execute("SELECT status, exit_code, ended_at, summary FROM runs WHERE id = ?", (run_id,)).fetchone()
        ranks = db.execute("SELECT rank, outcome, phase, message FROM rank_results WHERE run_id = ?",
                           (run_id,)).fetchall()
    finally:
        db.close()
    return row, ranks


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pkbw", required=True)
    parser.add_argument("--case", required=True)
    parser.add_argument("--cases", default=os.path.join(HERE, "host", "cases.json"))
    parser.add_argument("--cache", help="compile cache (shared by the cases)")
    parser.add_argument("--samples", default=os.path.join(ROOT, "samples", "solutions_host_f32_none_samples_baseline"))
    options = parser.parse_args()
    case = json.load(open(options.cases))[options.case]
    source = os.path.join(os.path.dirname(options.cases), case.get("source", options.case) + ".cpp")
    if case.get("known_hole"):
        # A hole pkbw does not close yet: the case states what pkbw should say, and is skipped until it does.
        print(f"{options.case}: skipped: known hole: {case['known_hole']}")
        sys.exit(77)
    if case.get("needs_landlock") and not landlock_available():
        print(f"{options.case}: skipped: this kernel has no Landlock, so the sandbox's refusals cannot be checked")
        sys.exit(77)
    failures = []
    with tempfile.TemporaryDirectory(prefix="pkbw-adv-") as work:
        store = os.path.join(work, "runs.db")
        cache = options.cache or os.path.join(work, "cache")
        nproc = case.get("nproc", 2)
        common = ["--backend", "host", "--nproc", str(nproc), "--dtype", "f32", "--store", store, "--cache-dir", cache]
        # Perf cases time with few iterations: what is checked is the verdict on the timing, not a speed.
        # One launch unless the case asks for more (each launch says hello again).
        quick_perf = ["--warmup", "2", "--pairs", "2", "--iters", "5", "--no-pkb", "--launches", "1"]
        mode = case.get("mode", "eval")
        # A case's own args replace the quick defaults they name (--iters 10 for a rule that needs 8 calls).
        extra = case.get("args", [])
        quick_perf = [x for i, x in enumerate(quick_perf) if (x if i % 2 == 0 else quick_perf[i - 1]) not in extra]
        args = [mode, "--problem", case["problem"], "--solution", source] + common + (
            quick_perf if mode == "perf" else []) + extra
        code, events, stderr, seconds, pkbw_pid = run_pkbw(options.pkbw, args, 120, case.get("env"))
        # The largest process this run waited for (pkbw, its ranks, the compiler): KiB on Linux.
        max_rss_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        for pattern in case.get("remove_after", []):  # what the candidate left outside the run
            for path in glob.glob(pattern):
                os.remove(path)
        if case.get("no_process_named"):
            check_none_named(case["no_process_named"], failures)
        finished = next((e for e in reversed(events) if e.get("event") == "run_finished"), {})
        status, message = finished.get("status"), finished.get("message", "")
        warnings = finished.get("warnings", [])
        print(f"{options.case}: status {status}, exit {code}, {seconds:.1f} s, largest process "
              f"{max_rss_mib:.0f} MiB\n  message: {message[:600]}")
        for w in warnings:
            print(f"  warning: {w}")
        # A race the candidate wins sometimes: the other outcome accepted, with its own expectations.
        if case.get("or_else") and status == case["or_else"].get("status"):
            case = {**case, **case["or_else"]}
        if status != case["status"]:
            failures.append(f"status {status}, expected {case['status']}")
        if code != case["exit"] or finished.get("exit_code") != case["exit"]:
            failures.append(f"exit code {code} (run_finished {finished.get('exit_code')}), expected {case['exit']}")
        for text in case.get("message", []):
            # A list: any one of them (one cheat that two checks can catch, whichever sees it first).
            alternatives = text if isinstance(text, list) else [text]
            if not any(t in message for t in alternatives):
                failures.append(f"message lacks '{' or '.join(alternatives)}'")
        for text in case.get("warnings", []):
            if not any(text in w for w in warnings) or text not in message:
                failures.append(f"no warning (in run_finished.warnings and the summary) containing '{text}'")
        if "own_clock_factor_at_least" in case:
            check_held_to_judge_clock(finished.get("perf") or {}, case["own_clock_factor_at_least"], failures)
        if "max_rss_mib" in case and max_rss_mib > case["max_rss_mib"]:
            failures.append(f"a process of the run reached {max_rss_mib:.0f} MiB, expected at most "
                            f"{case['max_rss_mib']} MiB")
        low, high = case.get("seconds", [0, 120])
        if not low <= seconds <= high:
            failures.append(f"took {seconds:.1f} s, expected {low}..{high} s")
        pids = check_leftovers(events, pkbw_pid, failures)
        if len(pids) != nproc:
            failures.append(f"{len(pids)} hello events with a pid, expected {nproc}")
        # The candidate processes, and what they started, are gone too.
        for event in events:
            if event.get("event") == "candidate" and isinstance(event.get("pid"), int) and pid_alive(event["pid"]):
                failures.append(f"candidate process {event['pid']} of rank {event.get('rank')} still alive")
            for left in event.get("leftovers", []) if event.get("event") == "candidate" else []:
                if pid_alive(left.get("pid", 0)):
                    failures.append(f"process {left} the candidate left is still alive")
        for text in case.get("candidate_events", []):
            if not any(text in json.dumps(e) for e in events
                       if e.get("event") in ("candidate", "timing_plan", "timed_check")):
                failures.append(f"no candidate, timing_plan or timed_check event containing '{text}'")
        for text in case.get("absent_warnings", []):
            for w in warnings:
                if text in w:
                    failures.append(f"warning '{w}' contains '{text}', expected none")
        if "frozen_cpu_below_ms" in case:
            # While the reference is timed the candidate's tree is frozen: it can use no CPU.
            blocks = [e for e in events if e.get("event") == "perf_result" and e.get("protocol") == "pkbw"
                      and e.get("side") == "reference"]
            if not blocks or any("frozen_cpu_ms" not in e for e in blocks):
                failures.append("reference blocks without frozen_cpu_ms")
            for e in blocks:
                if e.get("frozen_cpu_ms", 0) >= case["frozen_cpu_below_ms"] or not e.get("frozen", False):
                    failures.append(f"rank {e.get('rank')} block {e.get('block')}: candidate used "
                                    f"{e.get('frozen_cpu_ms')} ms of CPU while frozen (frozen: {e.get('frozen')})")
        run_id = finished.get("run_id", 0)
        row, ranks = check_store(store, run_id, failures)
        if "trace_lacks" in case or "trace_reference_iterations" in case:
            check_trace(options.pkbw, store, run_id, case, nproc, failures)
        if not row or row[0] != case["status"] or row[1] != case["exit"] or row[2] is None:
            failures.append(f"store row {row}, expected status {case['status']} exit {case['exit']} and ended_at")
        elif row[3] != message:
            failures.append("store summary differs from run_finished's message")
        culprit = case.get("culprit")
        if culprit:
            hits = [r for r in ranks if r[0] == culprit["rank"] and r[1] == culprit["outcome"] and r[2] == culprit["phase"]]
            if not hits:
                failures.append(f"no rank_results row for rank {culprit['rank']} {culprit['outcome']} in "
                                f"{culprit['phase']}: {ranks}")
        run_dir = next((e.get("run_dir") for e in events if e.get("event") == "run_started"), "")
        logs = [os.path.join(run_dir, f"rank_{r}.log") for r in range(2)]
        if "logs_at_least" in case:
            sizes = [os.path.getsize(p) if os.path.exists(p) else 0 for p in logs]
            if min(sizes) < case["logs_at_least"]:
                failures.append(f"rank logs {sizes} bytes, expected at least {case['logs_at_least']} each")
            forwarded = sum(1 for e in events if e.get("event") == "log")
            if forwarded > 2 * 2001 + 10:
                failures.append(f"{forwarded} log lines forwarded on stdout, expected at most ~4002")
        if case.get("show_contains"):
            shown = subprocess.run([options.pkbw, "show", str(run_id), "--store", store], capture_output=True,
                                   text=True, timeout=30).stdout
            for text in case["show_contains"]:
                if text not in shown:
                    failures.append(f"pkbw show lacks '{text}'")
        for text in case.get("log_contains", []):
            contents = "".join(open(p, errors="replace").read() for p in logs if os.path.exists(p))
            if text not in contents:
                failures.append(f"rank logs lack '{text}'")

        # The same store takes the next run: a good candidate passes.
        good = os.path.join(options.samples, case["problem"] + "_host.cpp")
        args = ["eval", "--problem", case["problem"], "--solution", good, "--trials", "1"] + common
        code, events, stderr, _, pkbw_pid = run_pkbw(options.pkbw, args, 120)
        finished = next((e for e in reversed(events) if e.get("event") == "run_finished"), {})
        if code != 0 or finished.get("status") != "pass":
            failures.append(f"next run on the store: {finished.get('status')} exit {code}: "
                            f"{finished.get('message', '')[:300]} {stderr[-300:]}")
        check_leftovers(events, pkbw_pid, failures)
        check_store(store, finished.get("run_id", 0), failures)
    for f in failures:
        print("FAIL: " + f)
    print("ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
