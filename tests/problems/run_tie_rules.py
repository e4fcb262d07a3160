#!/usr/bin/env python3
"""Problems 69 and 79: their tie rules decide integer outputs (69's ranks, 79's labels), and a candidate
with another rule is reported as tie-explained, through the real `pkbw eval`.

Usage: run_tie_rules.py --pkbw BIN --stem STEM [--cache DIR]

Exact inputs (k/4, k in [-8, 8]) tie often: 69's sigmoids take seventeen values, 79's similarities are
sums of few distinct products. Two host candidates derived from the baseline host sample
(samples/solutions_host_f32_none_samples_baseline/<STEM>_host.cpp), W = 2 and 4, fp32, 64 x 128:
  - the sample as it is (the problem's rule): must pass;
  - the sample with the rule flipped (69: the positive last among equal values; 79: the higher train
    index first): must mismatch on every rank, and every mismatch must be tie-explained (all mismatched
    elements in the rows the problem's tie_rows names).
That the classification is not vacuous (a mismatch outside the tie rows is not explained) is
problems.tie_explained.32's check; here nearly every row ties.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SAMPLES = os.path.join(ROOT, "samples", "solutions_host_f32_none_samples_baseline")
# stem -> (the sample's tie test, the flipped one)
FLIPS = {
    "69_gnn_negative_scoring": ("sigmoid(peer[largest + i * n + j]) > positive", "sigmoid(peer[largest + i * n + j]) >= positive"),
    "79_dinov2_distributed_knn": ("a.value == b.value && a.index < b.index", "a.value == b.value && a.index > b.index"),
}


def evaluate(pkbw, stem, source, world, store, cache):
    argv = [pkbw, "eval", "--problem", stem, "--solution", source, "--backend", "host", "--nproc", str(world),
            "--dtype", "f32", "--inputs", "exact", "--m", "64", "--n", "128", "--trials", "1", "--store", store,
            "--json"]
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
    if not final:
        sys.exit(f"FAIL: no run_finished event from {' '.join(argv)}\n{run.stderr[-2000:]}")
    shown = subprocess.run([pkbw, "show", str(final["run_id"]), "--store", store, "--json"], capture_output=True,
                           text=True, timeout=60)
    if shown.returncode != 0:
        sys.exit(f"FAIL: pkbw show {final['run_id']}: {shown.stderr[-1000:]}")
    ranks = json.loads(shown.stdout).get("ranks", [])
    return run.returncode, final.get("status"), [r.get("message") or "" for r in ranks]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pkbw", required=True)
    parser.add_argument("--stem", required=True, choices=sorted(FLIPS))
    parser.add_argument("--cache")
    args = parser.parse_args()
    sample = os.path.join(SAMPLES, args.stem + "_host.cpp")
    with open(sample) as f:
        text = f.read()
    rule, flipped_rule = FLIPS[args.stem]
    if text.count(rule) != 1:
        sys.exit(f"FAIL: {sample} no longer has exactly one `{rule}`: update {os.path.basename(__file__)}")
    failures = []
    with tempfile.TemporaryDirectory() as work:
        store = os.path.join(work, "runs.db")
        os.makedirs(os.path.join(work, "flipped"))
        flipped = os.path.join(work, "flipped", args.stem + "_host.cpp")
        with open(flipped, "w") as f:
            f.write(text.replace(rule, flipped_rule))
        for world in (2, 4):
            code, status, messages = evaluate(args.pkbw, args.stem, sample, world, store, args.cache)
            print(f"W = {world}, the sample: exit {code}, {status}")
            if code != 0 or status != "pass":
                failures.append(f"W = {world}: the sample should pass in exact mode: {status} {messages}")
            code, status, messages = evaluate(args.pkbw, args.stem, flipped, world, store, args.cache)
            print(f"W = {world}, the rule flipped: exit {code}, {status}")
            for m in messages:
                print("   ", m[:300])
            if code != 1 or status != "mismatch":
                failures.append(f"W = {world}: the flipped rule should mismatch: exit {code}, {status}")
            for m in messages:
                if "not allclose" not in m:
                    failures.append(f"W = {world}: a rank of the flipped rule did not mismatch: {m[:300]}")
                elif "tie-explained: all" not in m or "not tie-explained" in m:
                    failures.append(f"W = {world}: a mismatch of the flipped rule is not tie-explained: {m[:300]}")
    for failure in failures:
        print("FAIL:", failure)
    print("PASS" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
