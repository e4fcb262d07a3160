#!/usr/bin/env python3
"""Runs the CUDA adversarial cases (cuda/cases.json) through `pkbw eval --backend cuda --nproc 2` and
prints a table: case | expected | observed status + message excerpt | time to detect | leftovers | next
run | PASS/FAIL. Used by tools/gpu/adversarial.sh on a GPU machine; the whole set is bounded (every
phase has a short deadline, each pkbw call a wall limit, and cases past the overall budget are SKIP).

Usage: run_gpu_cases.py --pkbw BIN --out DIR [--budget 190] [--only case,case]
"""
import argparse
import json
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GOOD = os.path.join(ROOT, "samples", "solutions_cuda_bf16_h200_2_samples_baseline")
# Short deadlines for every phase but the candidate's (--timeout per case): no case can hang the set.
COMMON = ["--backend", "cuda", "--dtype", "bf16",
          "--timeout-start", "40", "--timeout-rendezvous", "40", "--timeout-inputs", "20",
          "--timeout-reference", "20", "--timeout-compare", "20", "--timeout-teardown", "10"]


def stream_run(argv, limit):
    """Runs pkbw --json; returns (exit code, [(seconds since start, event)], seconds)."""
    start = time.monotonic()
    proc = subprocess.Popen(argv + ["--json"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    events = []

    def read():
        for line in proc.stdout:
            try:
                events.append((time.monotonic() - start, json.loads(line)))
            except ValueError:
                pass

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        code = proc.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        proc.kill()
        code = proc.wait()
        code = f"killed after {limit} s"
    reader.join(5)
    return code, events, time.monotonic() - start


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1][0] != "Z"
    except OSError:
        return False


def gpu_pids():
    try:
        out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20).stdout
        return {int(x) for x in out.split() if x.strip().isdigit()}
    except (OSError, subprocess.TimeoutExpired):
        return set()


def leftovers(pids):
    """'none' or what is left: rank processes alive, or still holding a GPU context."""
    deadline = time.monotonic() + 8
    while True:
        procs = [p for p in pids if alive(p)]
        on_gpu = sorted(gpu_pids() & set(pids))
        ranks = subprocess.run(["pgrep", "-x", "pkbw-rank"], capture_output=True, text=True).stdout.split()
        if not procs and not on_gpu and not ranks:
            return "none"
        if time.monotonic() > deadline:
            return f"alive {procs} gpu {on_gpu} pkbw-rank {ranks}"
        time.sleep(0.25)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pkbw", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--budget", type=float, default=190)
    parser.add_argument("--only", default="")
    parser.add_argument("--nproc", type=int, default=2, help="ranks per run (cases that need more are skipped)")
    options = parser.parse_args()
    COMMON.extend(["--nproc", str(options.nproc)])
    cases = {k: v for k, v in json.load(open(os.path.join(HERE, "cuda", "cases.json"))).items()
             if not k.startswith("_")}
    if options.only:
        cases = {k: v for k, v in cases.items() if k in options.only.split(",")}
    os.makedirs(options.out, exist_ok=True)
    store = os.path.join(options.out, "adversarial.db")
    cache = os.path.join(options.out, "adversarial-cache")
    where = ["--store", store, "--cache-dir", cache]
    start = time.monotonic()

    # Compile every case in parallel first (a rank program that exits at once: compile, then crash).
    warm = [[options.pkbw, "eval", "--problem", c["problem"], "--solution", os.path.join(HERE, "cuda", k + ".cu"),
             "--store", os.path.join(options.out, "warm.db"), "--cache-dir", cache, "--rank-program", "/bin/true"]
            + COMMON for k, c in cases.items()]
    warm += [[options.pkbw, "eval", "--problem", p, "--solution", os.path.join(GOOD, p + "_cuda.cu"),
              "--store", os.path.join(options.out, "warm.db"), "--cache-dir", cache, "--rank-program", "/bin/true"]
             + COMMON for p in ("1_allreduce", "2_allgather")]
    running = []
    for argv in warm:
        running.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        while sum(p.poll() is None for p in running) >= 8:
            time.sleep(0.2)
    for p in running:
        try:
            p.wait(timeout=max(5, 90 - (time.monotonic() - start)))
        except subprocess.TimeoutExpired:
            p.kill()
    print(f"compiled {len(warm)} candidates and references in {time.monotonic() - start:.0f} s", flush=True)

    rows, failures = [], 0
    header = ("case", "expected", "observed", "detect s", "leftovers", "next run", "result")
    for name, case in cases.items():
        expected = case["status"] if isinstance(case["status"], list) else [case["status"]]
        said = case.get("message", []) + case.get("warnings", []) + case.get("info", [])
        expect_text = "|".join(expected) + (" " + "; ".join(said) if said else "")
        if time.monotonic() - start > options.budget:
            rows.append((name, expect_text, "-", "-", "-", "-", "SKIP (budget)"))
            continue
        if case.get("needs_ranks", 1) > options.nproc:
            rows.append((name, expect_text, "-", "-", "-", "-", f"SKIP (needs {case['needs_ranks']} ranks)"))
            continue
        source = os.path.join(HERE, "cuda", name + ".cu")
        trials = [] if "--trials" in case["args"] else ["--trials", "2"]
        mode = case.get("mode", "eval")
        quick = ["--pkb-warmup", "20", "--pkb-iters", "20", "--warmup", "5", "--pairs", "2", "--iters", "20",
                 "--launches", "1"] \
            if mode == "perf" else []
        argv = ([options.pkbw, mode, "--problem", case["problem"], "--solution", source] + where + COMMON + trials
                + quick + case["args"])
        code, events, seconds = stream_run(argv, 45)
        with open(os.path.join(options.out, name + ".jsonl"), "w") as f:  # every event, for a closer look
            f.writelines(json.dumps(e) + "\n" for _, e in events)
        finished = next((e for _, e in reversed(events) if e.get("event") == "run_finished"), {})
        status, message = finished.get("status", "?"), finished.get("message", "")
        warnings = finished.get("warnings", [])
        t_candidate = next((t for t, e in events if e.get("event") == "phase" and e.get("phase") == "candidate"), None)
        t_end = next((t for t, e in events if e.get("event") == "run_finished"), seconds)
        detect = f"{t_end - t_candidate:.1f}" if t_candidate is not None else f"({seconds:.1f})"
        pids = [e["pid"] for _, e in events if e.get("event") in ("hello", "candidate") and isinstance(e.get("pid"), int)]
        left = leftovers(pids)
        problems = []
        if status not in expected:
            problems.append(f"status {status}")
        if case["exit"] is not None and code != case["exit"]:  # null: the status decides
            problems.append(f"exit {code}")
        problems += [f"message lacks '{t}'" for t in case.get("message", []) if t not in message]
        problems += [f"no warning '{t}'" for t in case.get("warnings", []) if not any(t in w for w in warnings)]
        problems += [f"no info flag '{t}'" for t in case.get("info", [])
                     if not any(t in w for w in finished.get("info", []))]
        run_dir = next((e.get("run_dir") for _, e in events if e.get("event") == "run_started"), None)
        if case.get("log_contains") and run_dir:
            logs = ""
            for r in range(options.nproc):
                try:
                    logs += open(os.path.join(run_dir, f"rank_{r}.log"), errors="replace").read()[-200000:]
                except OSError:
                    pass
            problems += [f"logs lack '{t}'" for t in case["log_contains"] if t not in logs]
        if left != "none":
            problems.append("leftovers")
        good = os.path.join(GOOD, case["problem"] + "_cuda.cu")
        next_code, next_events, _ = stream_run(
            [options.pkbw, "eval", "--problem", case["problem"], "--solution", good] + where + COMMON
            + ["--trials", "1"], 45)
        next_status = next((e.get("status") for _, e in reversed(next_events) if e.get("event") == "run_finished"), "?")
        next_ok = next_code == 0 and next_status == "pass"
        if not next_ok:
            problems.append("next run")
        excerpt = (status + ": " + message.replace("\n", " ")[:110]) if message else status
        rows.append((name, expect_text[:70], excerpt, detect, left[:60], "ok" if next_ok else f"{next_status} ({next_code})",
                     "PASS" if not problems else "FAIL: " + ", ".join(problems)[:120]))
        failures += bool(problems)
        print(" | ".join(rows[-1]), flush=True)

    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    widths = [min(w, 112) for w in widths]
    lines = [" | ".join(str(c)[:w].ljust(w) for c, w in zip(header, widths))]
    lines.append("-+-".join("-" * w for w in widths))
    for r in rows:
        lines.append(" | ".join(str(c)[:w].ljust(w) for c, w in zip(r, widths)))
    lines.append(f"{sum(r[-1] == 'PASS' for r in rows)} PASS, {failures} FAIL, "
                 f"{sum(r[-1].startswith('SKIP') for r in rows)} SKIP in {time.monotonic() - start:.0f} s")
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(options.out, "adversarial.txt"), "w") as f:
        f.write(text + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
