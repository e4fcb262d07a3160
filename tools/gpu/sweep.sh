#!/usr/bin/env bash
# The GPU check of issue 17 (docs/sweeps.md): a sweep of problems 1-20 x the two sample generations at
# W=1 on every GPU of the machine (G runs at once), then the same pairs one by one with plain
# `pkbw eval`, printing both wall times and the sweep's table; then a perf sweep (one timed run at a
# time). Builds nothing: run `tools/gpu/checks.sh OUT build`
# first (it makes build-dev/bin/pkbw), or set PKBW.
# Usage: tools/gpu/sweep.sh OUT_DIR [sections]   sections: sweep serial perf (default: all three; each
# fits a 10-minute device call on its own). The compile caches are kept between calls (the sweep's and
# the one-by-one loop's separately, so each pays its own compiles once); COLD=1 wipes them first.
# Environment: PKBW, PROBLEMS (default 1-20), COLD
set -uo pipefail
source "$(dirname "$0")/budget.sh"
gpu_budget "$@" # runs under tools/gpu/budget.sh's budget (450 s)
[ $# -ge 1 ] || { echo "usage: tools/gpu/sweep.sh OUT_DIR" >&2; exit 2; }
out=$(realpath -m "$1")
shift
sections=" ${*:-sweep serial perf} "
cd "$(dirname "$0")/../.." || exit 1
mkdir -p "$out"
p=$(realpath -m "${PKBW:-build-dev/bin/pkbw}")
[ -x "$p" ] || { echo "sweep.sh: no pkbw at $p (run tools/gpu/checks.sh OUT build first, or set PKBW)"; exit 1; }
export PATH=/usr/local/cuda/bin:$PATH NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
scratch=/tmp/pkbw-sweep-check
[ "${COLD:-0}" = 1 ] && rm -rf "$scratch"
mkdir -p "$scratch"
export PKBW_CACHE_DIR=$scratch/cache
problems=${PROBLEMS:-1-20}
base=samples/solutions_cuda_bf16_h200_2_samples_baseline
tuned=samples/solutions_cuda_bf16_h200_2_samples_tuned
line() { printf '%s\n' "$*" | tee -a "$out/summary.txt"; }
line "sweep.sh: $(nvidia-smi -L 2>/dev/null | wc -l) GPUs; $("$p" --version | head -1)"

# 1. The sweep (eval, W=1): G runs at once on disjoint GPUs, compiles prefetched.
if [[ $sections == *" sweep "* ]]; then
rm -rf "$scratch/sweep"
t0=$(date +%s.%N)
"$p" sweep --solutions-dir "$base" --solutions-dir "$tuned" --problems "$problems" --mode eval --nproc 1 \
    --backend cuda --store "$scratch/sweep/runs.db" --json > "$out/sweep_eval.jsonl" 2> "$out/sweep_eval.err"
rc=$?
t1=$(date +%s.%N)
line "sweep eval W=1: exit $rc, wall $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s"
"$p" show --sweep 1 --store "$scratch/sweep/runs.db" | tee -a "$out/summary.txt"
fi

# 2. The same pairs one by one (what a shell loop does today), with a cold compile cache of its own.
if [[ $sections == *" serial "* ]]; then
export PKBW_CACHE_DIR=$scratch/cache-serial
rm -rf "$scratch/serial"
"$p" sweep --plan --json --solutions-dir "$base" --solutions-dir "$tuned" --problems "$problems" --nproc 1 \
    --backend cuda | python3 -c "
import json, sys
for p in json.loads(sys.stdin.readline())['pairs']:
    print(p['problem'], p['solution'])" > "$scratch/pairs.txt"
t0=$(date +%s.%N)
n=0; pass=0
while read -r problem solution; do
    "$p" eval --problem "$problem" --solution "$solution" --nproc 1 --backend cuda \
        --store "$scratch/serial/runs.db" --json > "$scratch/serial_$n.jsonl" 2>&1 && pass=$((pass + 1))
    n=$((n + 1))
done < "$scratch/pairs.txt"
t1=$(date +%s.%N)
line "one by one (eval W=1): $n pairs, $pass passed, wall $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s"
"$p" runs --store "$scratch/serial/runs.db" --limit 200 --json | python3 -c "
import json, sys, collections
c = collections.Counter((r['generation'] if isinstance(r.get('generation'), str) else r.get('generation', {}).get('label', '?'), r['status']) for r in map(json.loads, sys.stdin))
for (g, s), k in sorted(c.items()): print(f'  {g}: {s} {k}')" | tee -a "$out/summary.txt"
fi

# 3. perf: one timed run at a time on the node (the default), compiles cached from step 1.
if [[ $sections == *" perf "* ]]; then
    export PKBW_CACHE_DIR=$scratch/cache
    rm -rf "$scratch/perf"
    t0=$(date +%s.%N)
    timeout "$(gpu_limit 300)" "$p" sweep --solutions-dir "$base" --solutions-dir "$tuned" --problems "$problems" --mode perf \
        --nproc 1 --backend cuda --store "$scratch/perf/runs.db" --name perf --json -- --no-pkb --pairs 3 \
        > "$out/sweep_perf.jsonl" 2> "$out/sweep_perf.err"
    rc=$?
    t1=$(date +%s.%N)
    line "sweep perf W=1: exit $rc, wall $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s (124: cut at 300 s)"
    "$p" show --sweep 1 --store "$scratch/perf/runs.db" | tee -a "$out/summary.txt"
fi
cp "$scratch/sweep/runs.db" "$out/sweep_runs.db" 2>/dev/null
cp "$scratch/perf/runs.db" "$out/perf_runs.db" 2>/dev/null
true
