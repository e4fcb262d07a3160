#!/usr/bin/env python3
"""The A/A check on the host backend (docs/perf.md "Verdicts"): the reference timed against itself over
independent launches never reads faster or slower, its interval becomes the problem's noise floor in
noise_floors.json, and a later perf of the same problem and size judges with that floor as its band.
Args: PKBW SOURCE_ROOT"""
import json
import math
import os
import subprocess
import sys
import tempfile

pkbw, root = sys.argv[1], sys.argv[2]
work = tempfile.mkdtemp(prefix="pkbw-aa-")
env = dict(os.environ, PKBW_STORE=os.path.join(work, "runs.db"), PKBW_CACHE_DIR=os.path.join(work, "cache"))
common = ["--problem", "1", "--backend", "host", "--nproc", "2", "--m", "128", "--n", "128", "--trials", "1",
          "--launches", "3", "--pairs", "3", "--iters", "20", "--warmup", "10", "--no-pkb", "--json"]
failures = []


def perf(solution):
    done = subprocess.run([pkbw, "perf", "--solution", solution] + common, env=env, capture_output=True,
                          text=True, timeout=600)
    final = {}
    for line in done.stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("event") == "run_finished":
            final = event
    if final.get("status") != "pass":
        print(done.stdout[-3000:], done.stderr[-3000:])
        sys.exit(f"FAIL: perf --solution {solution}: {final.get('status')}: {final.get('message')}")
    return final["perf"]["pkbw"], final.get("run_id")


def check(condition, what):
    print(("ok: " if condition else "FAIL: ") + what)
    if not condition:
        failures.append(what)


aa, aa_run = perf("reference")
check(len(aa["launches"]) == 5 and aa["replicated"], f"an A/A run pools at least five launches ({len(aa['launches'])})")
check(aa["ci_low"] <= aa["speedup"] <= aa["ci_high"], "the interval holds the speedup")
check(aa["verdict"] in ("same", "ambiguous"), f"A/A is never faster or slower: {aa['verdict']} "
      f"{aa['speedup']:.3f} [{aa['ci_low']:.3f}, {aa['ci_high']:.3f}]")
check(aa["noise_floor"] == 0 and aa["band"] == 0.05, "an A/A run is judged by the minimum effect alone")
floors_path = os.path.join(os.path.dirname(env["PKBW_STORE"]), "noise_floors.json")
floors = json.load(open(floors_path))
entry = next((v for k, v in floors.items() if k.startswith("host|1_allreduce|w2|")), None)
check(entry is not None, f"noise_floors.json holds the problem's entry ({list(floors)})")
reach = max(abs(math.log(aa["ci_low"])), abs(math.log(aa["ci_high"])))
check(entry is not None and abs(entry["floor"] - (math.exp(reach) - 1)) < 1e-9 and entry["run_id"] == aa_run,
      "the floor is the furthest the A/A interval reached from 1")

# The reference given as a file: an ordinary pair (three launches, as asked), judged with the recorded floor.
pair, _ = perf(os.path.join(root, "problems", "1_allreduce", "reference_host.cpp"))
check(len(pair["launches"]) == 3, f"an ordinary pair times the launches asked for ({len(pair['launches'])})")
check(abs(pair["band"] - max(0.05, entry["floor"])) < 1e-9, f"the band is max(min effect, floor): {pair['band']}")
check(f"run {aa_run} " in pair["noise_floor_source"], f"the source names the A/A run: {pair['noise_floor_source']}")
check(pair["verdict"] in ("same", "ambiguous"), f"identical code is not faster or slower: {pair['verdict']}")
sys.exit(1 if failures else 0)
