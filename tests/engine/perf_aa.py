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
common = ["--problem", "1", "--backend", "host", "--nproc", "2", "--trials", "1",
          "--pairs", "3", "--iters", "20", "--warmup", "10", "--no-pkb", "--json"]
failures = []


def perf(solution, *extra, size="128", launches="3"):
    sized = ["--m", size, "--n", size, "--launches", launches]
    done = subprocess.run([pkbw, "perf", "--solution", solution] + sized + common + list(extra), env=env,
                          capture_output=True, text=True, timeout=600)
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
# At least five launches; ten when the verdict after five was ambiguous (one look, docs/perf.md "Replication").
check(aa["replicated"] and len(aa["launches"]) == (10 if aa["extended_from"] == 5 else 5)
      and aa["extended_from"] in (0, 5), f"an A/A run pools at least five launches ({len(aa['launches'])}, "
      f"extended from {aa['extended_from']})")
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
check(len(pair["launches"]) == (6 if pair["extended_from"] == 3 else 3) and pair["extended_from"] in (0, 3),
      f"an ordinary pair times the launches asked for, doubled once if ambiguous ({len(pair['launches'])})")
check(abs(pair["band"] - max(0.05, entry["floor"])) < 1e-9, f"the band is max(min effect, floor): {pair['band']}")
check(f"run {aa_run} " in pair["noise_floor_source"], f"the source names the A/A run: {pair['noise_floor_source']}")
check(pair["verdict"] in ("same", "ambiguous"), f"identical code is not faster or slower: {pair['verdict']}")
# No band (--min-effect 0, and a size with no floor recorded): identical code can never be "same" and
# is faster or slower only when its interval leaves 1, so the run extends to --max-launches and stops
# there: the one look. Without ambiguity after two launches it must have said so and stayed at two.
no_band, _ = perf(os.path.join(root, "problems", "1_allreduce", "reference_host.cpp"), "--min-effect", "0",
                  "--max-launches", "3", size="64", launches="2")
extended = no_band["extended_from"] == 2 and len(no_band["launches"]) == 3
stayed = no_band["extended_from"] == 0 and len(no_band["launches"]) == 2 and no_band["verdict"] != "ambiguous"
check(no_band["band"] == 0 and (extended or stayed),
      f"an ambiguous verdict after --launches extends the run once to --max-launches "
      f"({len(no_band['launches'])} launches, extended from {no_band['extended_from']}, {no_band['verdict']})")
sys.exit(1 if failures else 0)
