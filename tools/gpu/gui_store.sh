#!/usr/bin/env bash
# Records a store of real GPU runs for the workbench (the GUI review's data, docs/gui.md): a calibration,
# traced perf of native samples, a wrong candidate with its outputs kept, two candidates whose timing is
# not trusted, PKB's own LLM solutions with --trace, an eval sweep over both sample generations, and a
# PKB logs folder written by PKB's run_local.py with --download --profile (for `pkbw import-pkb`; not
# with QUICK). Packs the store, its run folders and the PKB logs
# into OUT_DIR/gui_store.tar.gz (the device returns few files), to open with pkbw-gui elsewhere.
# Usage: tools/gpu/gui_store.sh OUT_DIR   (needs a built tree: tools/gpu/checks.sh OUT_DIR build; .pkb:
# a PKB checkout with the cfbf870^ solution folders). QUICK=1: one run of each kind (about 2 minutes).
# Runs under tools/gpu/budget.sh's budget (450 s): each section packs the store so far into
# OUT_DIR/gui_store.tar.gz as it ends, and summary.txt gets its wall time, so a call the budget cuts
# still returns the runs recorded before; every step is bounded by what is left of the budget.
set -uo pipefail
source "$(dirname "$0")/budget.sh"
gpu_budget "$@"
out=$(realpath -m "${1:?usage: tools/gpu/gui_store.sh OUT_DIR}")
cd "$(dirname "$0")/../.." || exit 1
export PATH=/usr/local/cuda/bin:$PATH NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
p=${PKBW:-$PWD/build-dev/bin/pkbw}
[ -x "$p" ] || { echo "gui_store.sh: no pkbw at $p (run tools/gpu/checks.sh OUT build first)"; exit 1; }
[ -d .pkb ] || { echo "gui_store.sh: no .pkb (a PKB checkout with the cfbf870^ solution folders)"; exit 1; }
root=/tmp/pkbw-gui-store
rm -rf "$root" && mkdir -p "$root" "$out"
export PKBW_STORE=$root/runs.db PKBW_CACHE_DIR=/tmp/pkbw-gui-cache TORCH_EXTENSIONS_DIR=/tmp/pkbw-gui-ext
base=samples/solutions_cuda_bf16_h200_2_samples_baseline
tuned=samples/solutions_cuda_bf16_h200_2_samples_tuned
models="anthropic_claude-opus-4-7 google_gemini-3-pro-preview openai_gpt-5.5"
native="12 13 18 20" pkb_problems="2 5" sweep_problems=1-30
if [ "${QUICK:-0}" = 1 ]; then
    models=anthropic_claude-opus-4-7 native=12 pkb_problems=2 sweep_problems=1,2,12,46
fi
log=$out/gui_store.log
step() { # label, pkbw args...: one line per run (its final status) in the log and on stdout
    local label=$1
    shift
    local t0 rc
    t0=$(date +%s)
    if [ "$(gpu_left)" -le 20 ]; then
        printf '%-44s skipped: the budget is spent\n' "$label" | tee -a "$log"
        return 0
    fi
    timeout --foreground "$(gpu_limit 240)" "$p" "$@" > "$root/step.log" 2>&1
    rc=$?
    printf '%-44s rc=%d %3ds  %s\n' "$label" "$rc" $(($(date +%s) - t0)) \
        "$(grep -E '^run [0-9]+|speedup|MISMATCH|FAIL|error' "$root/step.log" | head -2 | tr '\n' ' ' | cut -c1-150)" | tee -a "$log"
}

# The store so far, packed (written beside and renamed, so a cut never leaves half an archive).
pack() {
    "$p" runs --store "$PKBW_STORE" > "$out/runs.txt" 2>&1
    tar czf "$out/gui_store.tar.gz.tmp" -C "$root" --exclude='warm_*' --exclude=step.log . &&
        mv "$out/gui_store.tar.gz.tmp" "$out/gui_store.tar.gz"
}

# PKB's solutions compile a torch extension on their first call: start those compiles now, in the
# background, one untimed eval each, while the native runs take the GPU.
for model in $models; do
    for n in $pkb_problems; do
        (PKBW_STORE=$root/warm_${model}_$n.db timeout --foreground "$(gpu_limit 240)" "$p" eval --pkb-checkout .pkb \
            --solutions-dir ".pkb/solutions_cuda_bf16_h100_8_$model" --problem "$n" --nproc 1 --trials 1 \
            --timeout-compile 200 > /dev/null 2>&1) &
    done
done

gpu_section "native samples: calibrate, traced perf" "$out"
step calibrate calibrate --nproc 1
for n in $native; do
    step "perf --trace $n baseline" perf --problem "$n" --solution cuda --solutions-dir "$base" --nproc 1 --trace
done
step "perf --trace 12 tuned" perf --problem 12 --solution cuda --solutions-dir "$tuned" --nproc 1 --trace
pack
gpu_section "a wrong candidate" "$out"
# A wrong candidate: zeros instead of the sum (mismatch on every trial, outputs kept).
step "eval wrong 1 (1024^2)" eval --problem 1_allreduce --solution tests/adversarial/cuda/all_zero.cu --nproc 1 \
    --all-trials --keep-outputs
[ "${QUICK:-0}" = 1 ] || step "eval wrong 1 (4096^2)" eval --problem 1_allreduce --solution tests/adversarial/cuda/all_zero.cu --nproc 1 \
    --m 4096 --n 4096 --all-trials
pack
gpu_section "untrusted timing" "$out"
# Candidates whose timing the judge cannot trust (invalid_timing): one skips timed calls it counts,
# one answers before its calls have written their outputs. The workbench must withhold their speedups.
for case in skip_by_count reply_early; do
    step "perf $case (invalid_timing)" perf --problem 1_allreduce --solution "tests/adversarial/cuda/$case.cu" --nproc 1
done
pack
gpu_section "PKB's LLM solutions, traced" "$out"
wait # the PKB warm-ups
for model in $models; do
    for n in $pkb_problems; do
        step "perf --trace pkb $n $model" perf --pkb-checkout .pkb --solutions-dir ".pkb/solutions_cuda_bf16_h100_8_$model" \
            --problem "$n" --nproc 1 --trace
    done
done
pack
# A sweep over the two sample generations (the Sweeps and Generations tabs, fast_p): evals, four runs
# sharing the GPU (correctness only).
gpu_section "eval sweep over both sample generations (problems $sweep_problems)" "$out"
# SIGINT 45 s before the budget ends, so that the sweep records what finished and the store is packed.
limit=$(($(gpu_limit 300) - 35))
if [ "$limit" -ge 30 ]; then
    timeout --foreground -k 15 -s INT "$limit" "$p" sweep --solutions-dir "$base" --solutions-dir "$tuned" --problems "$sweep_problems" \
        --mode eval --nproc 1 --backend cuda --runs-per-gpu 4 --name two-generations --store "$PKBW_STORE" \
        > "$root/sweep.log" 2>&1
    echo "sweep over two generations rc=$? ($(grep -c . "$root/sweep.log") lines)" | tee -a "$log"
    "$p" show --sweep 1 --store "$PKBW_STORE" 2>&1 | head -30 | tee -a "$log"
fi
pack
# PKB's run_local.py (over a minute; not with QUICK) gets what the sweep left, if that is enough.
if [ "${QUICK:-0}" != 1 ] && [ "$(gpu_left)" -gt 100 ]; then
    gpu_section "PKB's run_local.py with --download --profile" "$out"
    # PKB's own harness, with its outputs and torch-profiler traces, for import-pkb (over a minute: not in QUICK).
    (cd .pkb && timeout "$(gpu_limit 240)" python3 run_local.py --mode eval --problem 2 --solution cuda \
        --solutions-dir "$PWD/solutions_cuda_bf16_h100_8_anthropic_claude-opus-4-7" --nproc-per-node 1 \
        --measure-perf --trials 2 --download --profile --logs-dir "$root/pkb_logs" > "$root/run_local.log" 2>&1)
    echo "run_local.py --download --profile rc=$? ($(find "$root/pkb_logs" -type f 2>/dev/null | wc -l) files)" | tee -a "$log"
    cp "$root/run_local.log" "$out/"
    pack
fi
gpu_section_end
ls -la "$out/gui_store.tar.gz" | tee -a "$log"
