#!/usr/bin/env python3
"""Problem 58's ring terms through the real `pkbw eval`, at a tolerance that can see them.

Usage: run_ring_terms.py --pkbw BIN [--cache DIR]

PKB 58's loss is about 10 (the own block's positive pairs), while each other rank's negatives-only term
adds about B * 4.5e-5 (B = M/W; 1.4e-3 at the test shape, 0.023 at PKB's), so at PKB's tolerance
(atol = rtol = 1e-2, about 0.11 here) a candidate that skips the ring passes. This runs the baseline host
sample (samples/solutions_host_f32_none_samples_baseline/58_openclip_contrastive_loss_host.cpp) at
atol = rtol = 1e-5 (f32, 64 x 128, W = 2, 3, 4), where it must pass, and two derived candidates that must
mismatch at every W where they differ: one without the even-W step to rank r + W/2 (W = 2, 4), one that
takes the leftward blocks from the right (r + s twice; W = 3, 4 have a bidirectional step).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
STEM = "58_openclip_contrastive_loss"
SAMPLE = os.path.join(ROOT, "samples", "solutions_host_f32_none_samples_baseline", STEM + "_host.cpp")
TOLERANCE = "1e-5"
MUTANTS = {
    # name: (text in the sample, its replacement, the world sizes at which the result must change)
    "no_opposite_rank": ("if (w % 2 == 0 && w > 1) {", "if (false) {", [2, 4]),
    "left_from_right": ("text_of(r - s)", "text_of(r + s)", [3, 4]),
}


def derive(text, old, new, path):
    if text.count(old) != 1:
        sys.exit(f"FAIL: {SAMPLE} no longer has exactly one `{old}`: update {os.path.basename(__file__)}")
    with open(path, "w") as f:
        f.write(text.replace(old, new))
    return path


def evaluate(pkbw, source, world, store, cache):
    argv = [pkbw, "eval", "--problem", STEM, "--solution", source, "--backend", "host", "--nproc", str(world),
            "--dtype", "f32", "--m", "64", "--n", "128", "--trials", "2", "--all-trials", "--atol", TOLERANCE,
            "--rtol", TOLERANCE, "--store", store, "--json"]
    if cache:
        argv += ["--cache-dir", cache]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=240)
    final = {}
    for line in run.stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("event") == "run_finished":
            final = event
    message = final.get("message") or (run.stderr.strip().splitlines() or [""])[-1]
    return final.get("status"), message


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pkbw", required=True)
    parser.add_argument("--cache")
    options = parser.parse_args()
    with open(SAMPLE) as f:
        text = f.read()
    failures = 0
    with tempfile.TemporaryDirectory(prefix="pkbw-ring58-") as work:
        store = os.path.join(work, "runs.db")
        for world in (2, 3, 4):
            status, message = evaluate(options.pkbw, SAMPLE, world, store, options.cache)
            ok = status == "pass"
            failures += not ok
            print(f"{'PASS' if ok else 'FAIL'} sample W={world} at atol = rtol = {TOLERANCE}: {status} {message[:300]}")
        for name, (old, new, worlds) in MUTANTS.items():
            mutant = derive(text, old, new, os.path.join(work, f"{STEM}_{name}_host.cpp"))
            for world in worlds:
                status, message = evaluate(options.pkbw, mutant, world, store, options.cache)
                ok = status == "mismatch"
                failures += not ok
                print(f"{'PASS' if ok else 'FAIL'} {name} W={world} must mismatch: {status} {message[:300]}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
