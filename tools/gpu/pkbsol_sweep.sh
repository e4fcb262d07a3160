#!/usr/bin/env bash
# PKB's published solutions of one model through pkbw on one GPU machine (docs/pkb-interop.md "PKB's
# published solutions on one H200"): first evals of PROBLEMS, JOBS at once on the machine's GPUs (one
# trial each; they also JIT-compile each solution's torch extensions into the compile cache, in its
# sandbox), one table row per problem as it ends (status, seconds, flags/warnings, message), then a
# `pkbw sweep` of those that passed or mismatched, in the time left. Builds nothing: build-dev/bin/pkbw
# (tools/gpu/judge.sh SECTIONS=build) or PKBW. Needs .pkb (tools/gpu/prepare.sh).
# Usage: tools/gpu/pkbsol_sweep.sh OUT_DIR   Environment: MODEL (anthropic_claude-opus-4-7),
#        PROBLEMS (default 1-87, as a space-separated list or A-B), JOBS (10), W (1), SWEEP (1: run the sweep).
set -uo pipefail
source "$(dirname "$0")/budget.sh"
gpu_budget "$@"
out=$(realpath -m "${1:?usage: tools/gpu/pkbsol_sweep.sh OUT_DIR}")
cd "$(dirname "$0")/../.." || exit 1
p=$(realpath -m "${PKBW:-build-dev/bin/pkbw}")
model=${MODEL:-anthropic_claude-opus-4-7} jobs=${JOBS:-10} W=${W:-1}
sol=$PWD/.pkb/solutions_cuda_bf16_h100_8_$model
problems=${PROBLEMS:-1-87}
[[ $problems == *-* ]] && problems=$(seq "${problems%-*}" "${problems#*-}")
export PATH=/usr/local/cuda/bin:$PATH NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p "$out/first"
line() { printf '%s\n' "$*" | tee -a "$out/summary.txt"; }
[ -x "$p" ] || { line "pkbsol_sweep.sh: no pkbw at $p"; exit 2; }
[ -d "$sol" ] || { line "pkbsol_sweep.sh: no $sol (tools/gpu/prepare.sh)"; exit 2; }

first_eval() { # problem
    local n=$1 t0
    t0=$(date +%s)
    PKBW_STORE=$out/first/$n.db timeout 150 "$p" eval --pkb-checkout "$PWD/.pkb" --solutions-dir "$sol" --problem "$n" \
        --nproc "$W" --backend cuda --trials 1 --timeout-compile 140 --json > "$out/first/$n.jsonl" 2>&1
    python3 tools/gpu/final_row.py "$out/first/$n.jsonl" "$n" $(( $(date +%s) - t0 )) --flags >> "$out/first/rows.md"
}
gpu_section "first evals of $model (W=$W, 1 trial, $jobs at once)" "$out"
for n in $problems; do
    [ "$(gpu_left)" -lt 170 ] && { line "budget: first evals started up to problem $((n - 1))"; break; }
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
    first_eval "$n" &
done
wait
sort -t'|' -k2 -n "$out/first/rows.md" | tee -a "$out/summary.txt"
line "status counts: $(awk -F'|' '{gsub(/ /, "", $3); print $3}' "$out/first/rows.md" | sort | uniq -c | tr '\n' ' ')"
gpu_section_end
if [ "${SWEEP:-1}" = 1 ]; then
    warm=$(awk -F'|' '$3 ~ /pass|mismatch/ {gsub(/ /, "", $2); print $2}' "$out/first/rows.md" | sort -n | paste -sd,)
    gpu_section "sweep of the warmed problems ($warm)" "$out"
    if [ -n "$warm" ] && [ "$(gpu_left)" -gt 40 ]; then
        timeout "$(gpu_limit 600)" "$p" sweep --pkb-checkout "$PWD/.pkb" --solutions-dir "$sol" --problems "$warm" --mode eval \
            --nproc "$W" --backend cuda --store "$out/sweep.db" --json > "$out/sweep.jsonl" 2> "$out/sweep.err"
        line "sweep exit $?"
        "$p" show --sweep 1 --store "$out/sweep.db" 2>&1 | head -60 | tee -a "$out/summary.txt"
    fi
    gpu_section_end
fi
