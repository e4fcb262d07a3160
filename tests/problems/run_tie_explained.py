#!/usr/bin/env python3
"""Issue 16's tie-explained mismatch on a real problem: 32_fused_moe_fwd_lora through the real `pkbw eval`.

Usage: run_tie_explained.py --pkbw BIN [--cache DIR]

Exact inputs (k/4, k in [-2, 2]) make the fp32 router logits exact multiples of 1/16, so many tokens have
equal 2nd and 3rd probabilities: tie rows, which the problem's tie_rows hook names. Three host candidates,
all derived from the baseline host sample (samples/solutions_host_f32_none_samples_baseline/
32_fused_moe_fwd_lora_host.cpp) at W = 2, fp32, 64 x 128:
  - the sample as it is (lower expert index at a tie, the reference's rule): must pass;
  - the sample with the tie rule flipped (higher index): must mismatch, and every mismatching rank's
    message must say the mismatch is tie-explained;
  - the flipped sample that also corrupts one element of row 0 of every rank unless row 0 ties: must
    mismatch and not be tie-explained on some rank (the classification is not vacuous).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SAMPLE = os.path.join(ROOT, "samples", "solutions_host_f32_none_samples_baseline", "32_fused_moe_fwd_lora_host.cpp")
STEM = "32_fused_moe_fwd_lora"
TIE_TEST = "(best < 0 || probs[e] > probs[best])"
FLIPPED = "(best < 0 || probs[e] >= probs[best])"
STORE_LINE = "out[t * n + j] = acc;"
CORRUPTED = "out[t * n + j] = acc + (t == 0 && j == 0 ? 1000.f : 0.f);"


def derive(text, old, new, path):
    if text.count(old) != 1:
        sys.exit(f"FAIL: {SAMPLE} no longer has exactly one `{old}`: update {os.path.basename(__file__)}")
    with open(path, "w") as f:
        f.write(text.replace(old, new))
    return path


def evaluate(pkbw, source, store, cache):
    argv = [pkbw, "eval", "--problem", STEM, "--solution", source, "--backend", "host", "--nproc", "2", "--dtype",
            "f32", "--inputs", "exact", "--m", "64", "--n", "128", "--trials", "1", "--store", store, "--json"]
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
    parser.add_argument("--cache")
    args = parser.parse_args()
    with open(SAMPLE) as f:
        text = f.read()
    failures = []
    with tempfile.TemporaryDirectory() as work:
        store = os.path.join(work, "runs.db")
        for folder in ("flipped", "corrupted"):
            os.makedirs(os.path.join(work, folder))
        flipped = derive(text, TIE_TEST, FLIPPED, os.path.join(work, "flipped", STEM + "_host.cpp"))
        corrupted = derive(text.replace(TIE_TEST, FLIPPED), STORE_LINE, CORRUPTED,
                           os.path.join(work, "corrupted", STEM + "_host.cpp"))

        code, status, messages = evaluate(args.pkbw, SAMPLE, store, args.cache)
        print(f"sample as it is: exit {code}, {status}")
        if code != 0 or status != "pass":
            failures.append(f"the baseline sample should pass in exact mode: {status} {messages}")

        code, status, messages = evaluate(args.pkbw, flipped, store, args.cache)
        mismatched = [m for m in messages if "not allclose" in m]
        print(f"tie rule flipped: exit {code}, {status}")
        for m in messages:
            print("   ", m[:300])
        if code != 1 or status != "mismatch" or not mismatched:
            failures.append(f"the flipped tie rule should mismatch: exit {code}, {status}")
        for m in mismatched:
            if "tie-explained: all" not in m or "not tie-explained" in m:
                failures.append(f"a mismatch of the flipped tie rule is not tie-explained: {m[:300]}")

        code, status, messages = evaluate(args.pkbw, corrupted, store, args.cache)
        print(f"flipped and row 0 corrupted: exit {code}, {status}")
        for m in messages:
            print("   ", m[:300])
        if code != 1 or status != "mismatch":
            failures.append(f"the corrupted candidate should mismatch: exit {code}, {status}")
        if not any("not tie-explained" in m for m in messages):
            failures.append("no rank of the corrupted candidate says 'not tie-explained'")
    for failure in failures:
        print("FAIL:", failure)
    print("PASS" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
