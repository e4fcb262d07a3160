#!/usr/bin/env bash
# The judge's GPU figures (docs/perf.md "What the timing cannot miss"): the tuned samples' perf speedups
# and the wall time of each whole `pkbw perf` with an older pkbw (OLD, built from the commit before a
# change to the timing) and this one (NEW), and the warm eval turnaround of problem 2 with each, at W
# ranks.
# Usage: tools/gpu/trust.sh OUT_DIR OLD_PKBW NEW_PKBW   (W default 1; PROBLEMS default "1 2 8 12")
set -uo pipefail
source "$(dirname "$0")/budget.sh"
gpu_budget "$@" # runs under tools/gpu/budget.sh's budget (450 s)
out=$(realpath -m "${1:?usage: tools/gpu/trust.sh OUT_DIR OLD_PKBW NEW_PKBW}")
old=${2:?old pkbw}
new=${3:?new pkbw}
cd "$(dirname "$0")/../.." || exit 1
W=${W:-1}
problems=${PROBLEMS:-"1 2 8 12"}
tuned=samples/solutions_cuda_bf16_h200_2_samples_tuned
export PATH=/usr/local/cuda/bin:$PATH NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
mkdir -p "$out" /tmp/pkbw-trust
line() { printf '%s\n' "$*" | tee -a "$out/trust.txt"; }
# Each version its own store and cache (the cache's entry format changed between them).
run() { # version label args...
    local version=$1 label=$2
    shift 2
    local bin=$old
    [ "$version" = new ] && bin=$new
    "$bin" "$@" --backend cuda --nproc "$W" --store /tmp/pkbw-trust/$version.db \
        --cache-dir /tmp/pkbw-trust/cache-$version --json > "$out/$version-$label.jsonl" 2> "$out/$version-$label.err"
}
summary() { # file -> "status speedup [lo, hi] cand_median_ms"
    python3 - "$1" <<'PY'
import json, sys
final = {}
for text in open(sys.argv[1]):
    try:
        e = json.loads(text)
    except ValueError:
        continue
    if e.get("event") == "run_finished":
        final = e
perf = final.get("perf") or {}
p = perf.get("pkbw") or {}
sides = perf.get("sides") or {}
cand = (sides.get("candidate") or {}).get("median_ms") or (sides.get("candidate") or {}).get("median")
text = f"{final.get('status', '?')}"
if p:
    text += f" {p.get('speedup', 0):.3f}x [{p.get('ci_low', 0):.3f}, {p.get('ci_high', 0):.3f}]"
if cand:
    text += f" cand {cand:.4f} ms"
pkb = perf.get("pkb") or {}
if isinstance(pkb.get("speedup"), (int, float)):
    text += f" (PKB {pkb['speedup']:.3f}x)"
timing = perf.get("timing") or {}
if timing.get("calls_per_block"):
    text += f" [{timing.get('pairs')}x{timing.get('calls_per_block')} calls]"
if p.get("verdict"):
    text += f" {p['verdict']}"
if final.get("status") not in ("pass", None):
    text += " | " + final.get("message", "")[:160]
print(text)
PY
}
# Compile everything first, in parallel (a rank program that exits at once).
for version in old new; do
    for n in $problems 2; do
        run $version warm-$n eval --problem "$n" --solution cuda --solutions-dir $tuned --rank-program /bin/true &
    done
done
wait
line "== tuned samples, perf at W=$W: before (old pkbw, candidate in the judge's process) and after"
line "problem | before | after (--launches 1 --graph off) | after (default launches and graph figure)"
timed() { # version label args...: the run, then its wall seconds
    local t0 t1
    t0=$(date +%s.%N)
    run "$@"
    t1=$(date +%s.%N)
    python3 -c "print(f'{$t1-$t0:.1f} s')"
}
for n in $problems; do
    old_s=$(timed old perf-$n perf --problem "$n" --solution cuda --solutions-dir $tuned)
    # One launch without the graph figure isolates what the judge's checks cost; the default launches add
    # replication across launches (more processes, each its own placement) and the graph figure twice the
    # blocks, costs the user chooses with --launches and --graph.
    one_s=$(timed new perf1-$n perf --problem "$n" --solution cuda --solutions-dir $tuned --launches 1 --graph off)
    new_s=$(timed new perf-$n perf --problem "$n" --solution cuda --solutions-dir $tuned)
    line "$n | $(summary "$out/old-perf-$n.jsonl") ($old_s) | $(summary "$out/new-perf1-$n.jsonl") ($one_s) | $(summary "$out/new-perf-$n.jsonl") ($new_s)"
done
line "== warm eval turnaround, problem 2 tuned, W=$W (wall seconds of the whole pkbw command)"
for version in old new; do
    times=""
    for i in 1 2 3; do
        t0=$(date +%s.%N)
        run $version eval2-$i eval --problem 2 --solution cuda --solutions-dir $tuned
        t1=$(date +%s.%N)
        times+=" $(python3 -c "print(f'{$t1-$t0:.2f}')")($(summary "$out/$version-eval2-$i.jsonl" | cut -d' ' -f1))"
    done
    line "$version:$times"
done
