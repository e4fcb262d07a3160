#!/usr/bin/env bash
# `pkbw perf` of CUDA samples one after another on one GPU (the problem batches' "perf of every sample"),
# one table row each as it ends: the headline figure (graph or launched), its speedup, interval and
# verdict, a call's time on each side, the run's status and seconds. Uses the compile cache in
# PKBW_CACHE_DIR (tools/gpu/fidelity.sh's samples section fills it). Stops starting runs when the
# budget (tools/gpu/budget.sh) is nearly spent. OUT_DIR/perf.md grows as runs end; the JSON lines stay
# in WORK (/tmp/pkbw-batch-perf), every run in one store there (WORK/store.db).
# Usage: tools/gpu/batch_perf.sh OUT_DIR PKBW SAMPLE_FILE...   Environment: LAUNCHES (2), W (1),
#   PERF_RUN_S (120 s a run), PERF_RUN_77_S (240 s for 77).
set -uo pipefail
source "$(dirname "$0")/budget.sh"
gpu_budget "$@"
out=$(realpath -m "${1:?usage: tools/gpu/batch_perf.sh OUT_DIR PKBW SAMPLE...}")
pkbw=$(realpath -m "${2:?pkbw binary}")
shift 2
cd "$(dirname "$0")/../.." || exit 1
work=${WORK:-/tmp/pkbw-batch-perf}
export PATH=/usr/local/cuda/bin:$PATH NCCL_NVLS_ENABLE=0
mkdir -p "$out" "$work"
[ -f "$out/perf.md" ] || printf '%s\n' "| sample | status | figure | speedup [95% CI] verdict | reference / candidate a call | s |" \
    "|---|---|---|---|---|---|" > "$out/perf.md"
for f in "$@"; do
    [ "$(gpu_left)" -lt 40 ] && { echo "budget: stopped before $f" >> "$out/perf.md"; break; }
    stem=$(basename "$f" _cuda.cu)
    gen=$(basename "$(dirname "$f")" | sed 's/solutions_cuda_bf16_h200_2_samples_//')
    log="$work/$gen-$stem.jsonl"
    t0=$(date +%s)
    limit=${PERF_RUN_S:-120}
    case "$stem" in 77_*) limit=${PERF_RUN_77_S:-240} ;; esac # its reference's calls take milliseconds
    timeout --foreground "$(gpu_limit "$limit")" "$pkbw" perf --problem "$stem" --solution "$f" --nproc "${W:-1}" \
        --backend cuda --dtype bf16 --launches "${LAUNCHES:-2}" --store "$work/store.db" --json > "$log" 2>&1
    python3 - "$log" "$gen $stem" $(( $(date +%s) - t0 )) >> "$out/perf.md" <<'PY'
import sys
sys.path.insert(0, "tools/gpu")
from replicate_table import final_event
path, label, seconds = sys.argv[1:4]
final = final_event(path)
perf = final.get("perf") or {}
p = perf.get("pkbw") or {}
status = final.get("status", "no run_finished")
if p.get("speedup"):
    figure = f"{p['speedup']:.3f}x [{p.get('ci_low', 0):.3f}, {p.get('ci_high', 0):.3f}] {p.get('verdict', '?')}"
    h = perf.get(perf.get("headline") or "launched") or {}
    calls = f"{h.get('reference_median_ms', 0) * 1000:.1f} / {h.get('candidate_median_ms', 0) * 1000:.1f} us"
else:
    figure = " ".join(str(final.get("message", "")).split())[:160].replace("|", "/")
    calls = ""
print(f"| {label} | {status} | {perf.get('headline', '')} | {figure} | {calls} | {seconds} |")
PY
done
