#!/usr/bin/env python3
"""One problem's baseline host sample against its host oracle, through the real `pkbw eval`.

Usage: run_sample.py --pkbw BIN --stem STEM [--samples DIR] [--cache DIR] [--worlds 2,4,8] [--shape MxN]
                     [--trials K]

Runs `pkbw eval --backend host --dtype f32` of samples/solutions_host_f32_none_samples_baseline/
<STEM>_host.cpp at every world size of --worlds (small shapes, two trials, a store of its own). W = 2
and W = 4 must pass; W = 8 and above must pass unless the problem refuses that world size (pkbw's
usage error, exit 2, with the problem's reason), which is printed and accepted. A problem without a
host sample fails with a message saying which file to write (docs/problems.md). Registry coverage
(every problem `pkbw problems --json` lists has a test) is checked with --check-registry instead.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SAMPLES = os.path.join(ROOT, "samples", "solutions_host_f32_none_samples_baseline")

# Shapes for the run: small enough for a loaded 2-core machine, valid for every problem's divisibility
# rules at W = 2, 4, 8 (16 needs W | M, 19 needs 128 | N, 20 needs 128 | M*N). A problem whose rules
# these break gets an entry here (stem -> (m, n)); problems with fixed sizes ignore them.
DEFAULT_SHAPE = (64, 128)
SHAPES = {
    # V = 32000 is fixed, so the logits GEMM is M * 32000 * N per rank and per side.
    "25_importance_sampling_loss": (16, 32),
    # M = 1024 gives b = 2, s = 8: several chunks at W = 2 and 4 (M = 64 would make one chunk).
    "83_vocab_parallel_log_prob_topk_chunked": (1024, 128),
    "84_vocab_parallel_log_prob_topk_chunked_backward": (1024, 128),
    # K = 12150 N/1024 keys per range (21600 at W = 8): N = 8 gives 94 (168), an O(K^2) attention the
    # double-precision oracle and the host sample finish in seconds (perf's timed calls too).
    "77_magi1_cso_async_attention": (64, 8),
}


def run_eval(pkbw, stem, source, world, store, cache, m, n, trials=2):
    argv = [pkbw, "eval", "--problem", stem, "--solution", source, "--backend", "host", "--nproc", str(world),
            "--dtype", "f32", "--m", str(m), "--n", str(n), "--trials", str(trials), "--all-trials",
            "--store", store, "--cache-dir", cache, "--json"]
    start = time.monotonic()
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
    return run.returncode, final.get("status"), message, time.monotonic() - start


def check_registry(pkbw, tested):
    # JSON lines: one {"event": "problem", ...} per problem.
    listed = [json.loads(line) for line in subprocess.run([pkbw, "problems", "--json"], capture_output=True,
                                                          text=True, check=True).stdout.splitlines() if line]
    stems = sorted(p["stem"] for p in listed)
    missing = [s for s in stems if s not in tested]
    extra = [s for s in tested if s not in stems]
    for stem in missing:
        print(f"FAIL: {stem} is registered but has no problems.sample test (re-run cmake)")
    for stem in extra:
        print(f"FAIL: {stem} has a problems.sample test but `pkbw problems` does not list it")
    no_sample = [s for s in stems if not os.path.exists(os.path.join(SAMPLES, s + "_host.cpp"))]
    for stem in no_sample:
        print(f"FAIL: {stem} has no baseline host sample {os.path.relpath(SAMPLES, ROOT)}/{stem}_host.cpp")
    print(f"{len(stems)} registered problems, {len(tested)} with a sample test, {len(no_sample)} without a sample")
    return 1 if missing or extra or no_sample else 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pkbw", required=True)
    parser.add_argument("--stem")
    parser.add_argument("--samples", default=SAMPLES)
    parser.add_argument("--cache")
    parser.add_argument("--worlds", default="2,4,8")
    parser.add_argument("--shape", metavar="MxN", help="run at this --m/--n instead of the problem's test shape "
                        "(a second shape, to catch a candidate that hard-codes the first)")
    parser.add_argument("--trials", type=int, default=2, help="trials per world size (more for problems whose "
                        "shapes change with the trial: 81's counts, 85's empty ranks)")
    parser.add_argument("--check-registry", metavar="STEMS", help="comma-separated stems that have a test")
    options = parser.parse_args()
    if options.check_registry is not None:
        return check_registry(options.pkbw, [s for s in options.check_registry.split(",") if s])
    if not options.stem:
        parser.error("--stem or --check-registry is required")
    stem = options.stem
    source = os.path.join(options.samples, stem + "_host.cpp")
    if not os.path.exists(source):
        print(f"FAIL: {stem} has no baseline host sample: write {source} (a self-contained host candidate, "
              f"as an LLM would write it; docs/problems.md, 'Adding a problem')")
        return 1
    m, n = SHAPES.get(stem, DEFAULT_SHAPE)
    if options.shape:
        m, n = (int(x) for x in options.shape.lower().split("x"))
    failures = 0
    with tempfile.TemporaryDirectory(prefix="pkbw-sample-") as work:
        cache = options.cache or os.path.join(work, "cache")
        for world in [int(w) for w in options.worlds.split(",")]:
            code, status, message, seconds = run_eval(options.pkbw, stem, source, world,
                                                      os.path.join(work, "runs.db"), cache, m, n, options.trials)
            if code == 0 and status == "pass":
                print(f"PASS {stem} W={world} ({m}x{n} f32, {options.trials} trials) in {seconds:.1f} s")
            elif world > 4 and code == 2:
                print(f"SKIP {stem} W={world}: the problem refuses it: {message}")
            else:
                failures += 1
                print(f"FAIL {stem} W={world}: exit {code}, status {status}: {message[:600]}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
