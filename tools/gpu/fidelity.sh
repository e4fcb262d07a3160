#!/usr/bin/env bash
# Fidelity of pkbw's CUDA references on one GPU in one device call (docs/building.md "Fidelity on a
# GPU"): on a built tree, W=1, it writes under OUT_DIR, each table growing row by row as it runs,
#   crosscheck.md         every problem's CUDA reference against PKB's PyTorch reference on the same
#                         inputs (tools/pkb_crosscheck.py table --backend cuda; 32 and 40-47 first);
#   crosscheck_rp_off.md  the problems whose GEMMs PyTorch may split-K in bf16 (31, 32, 40-42, 47)
#                         again with PyTorch's reduced-precision reductions off
#                         (PKBXC_CUBLAS_REDUCED_PRECISION=off): which side a mismatch comes from;
#   samples.md            `pkbw eval` of every CUDA sample (baseline and tuned) against its reference;
#   moe/summary.txt       the MoE kernel check, bit for bit (tools/gpu/moe_permute.sh, SMOKE=0);
#   stages/check.txt      the GEMM and elementwise stages of 32 and 40-47 run by PyTorch
#                         (tools/gpu/torch_stages.py) and by the toolkit on PyTorch's own inputs
#                         (tools/gpu/torch_stage_check.cu), bit for bit, stage by stage: which stage
#                         differs, and for the GEMMs feeding a ReLU how many pre-activations change sign;
#   summary.txt           each section's wall time and its table's last lines.
# It builds nothing of pkbw; pkbw compiles the references and samples it runs (its compile cache, in
# parallel), and the MoE kernel check is one nvcc compile in the background. Ends within the budget
# of tools/gpu/budget.sh (450 s); the compile cache is kept in WORK, so a second call is faster.
# Usage: bash tools/gpu/fidelity.sh OUT_DIR BUILD_DIR [PKB_CHECKOUT]
#   BUILD_DIR: where `cmake --build` put bin/pkbw (e.g. build-dev); PKB_CHECKOUT: a checkout of PKB
#   HEAD (reference/, utils/; default .pkb-head, else .pkb; an exported tree may name its commit in a
#   REVISION file).
# Environment: PROBLEMS (ids, default every folder under problems/), DTYPES (bf16), XC_M, XC_N (the
#   cross-check's M and N, 1024),
#   SKIP_SAMPLES (problem ids whose samples the samples section leaves out), EXACT_TOO (76 87: problems
#   whose baseline samples also run on exact inputs),
#   JOBS (cross-check rows at once, default 12), WORK (/tmp/pkbw-fidelity), SECTIONS (default
#   "moe crosscheck stages rp_off samples").
set -uo pipefail
source "$(dirname "$0")/budget.sh"
gpu_budget "$@"
out=$(realpath -m "${1:?usage: tools/gpu/fidelity.sh OUT_DIR BUILD_DIR [PKB_CHECKOUT]}")
build=$(realpath -m "${2:?usage: tools/gpu/fidelity.sh OUT_DIR BUILD_DIR [PKB_CHECKOUT]}")
cd "$(dirname "$0")/../.." || exit 1
pkb=${3:-$([ -d .pkb-head ] && echo .pkb-head || echo .pkb)}
pkb=$(realpath -m "$pkb")
p=$build/bin/pkbw
work=${WORK:-/tmp/pkbw-fidelity}
dtypes=${DTYPES:-bf16} xc_m=${XC_M:-1024} xc_n=${XC_N:-1024} jobs=${JOBS:-12}
sections=${SECTIONS:-moe crosscheck stages rp_off samples}
mkdir -p "$out" "$work"
export PATH=/usr/local/cuda/bin:$PATH NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export PKBW_CACHE_DIR=$work/cache PKBW_PYTHON=${PKBW_PYTHON:-python3}
want() { [[ " $sections " == *" $1 "* ]]; }
line() { printf '%s\n' "$*" | tee -a "$out/summary.txt"; }
# The checkout's commit: its own .git, else a REVISION file (an exported tree), never the enclosing
# repository's (a checkout inside pkbw's tree would otherwise report pkbw's commit).
pkb_revision() {
    if [ -e "$pkb/.git" ]; then git -C "$pkb" rev-parse --short HEAD; else cat "$pkb/REVISION" 2>/dev/null || echo "(revision unknown)"; fi
}

[ -x "$p" ] || { line "fidelity.sh: no pkbw at $p (build first: cmake --build $build)"; exit 2; }
# Only the sections that run PKB's references need its checkout: the samples and the MoE check do not.
needs_pkb=0
for section in crosscheck stages rp_off; do
    [[ " $sections " == *" $section "* ]] && needs_pkb=1
done
if [ "$needs_pkb" = 1 ] && [ ! -f "$pkb/utils/input_output_tensors.py" ]; then
    line "fidelity.sh: $pkb is not a PKB checkout (reference/, utils/), which the sections $sections need"
    exit 2
fi
line "fidelity.sh: $("$p" --version | tr '\n' ' '); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1); torch $(python3 -c 'import torch; print(torch.__version__, torch.version.cuda)' 2>&1 | tail -1); PKB $(pkb_revision)"

# The problems: every folder, the five that mismatched on the H200 (issue 29) first.
first="32 40 41 42 47"
all=$(ls problems | grep -E '^[0-9]+_' | cut -d_ -f1 | sort -n)
ids=${PROBLEMS:-$(echo $first $(for i in $all; do [[ " $first " == *" $i "* ]] || echo "$i"; done))}
id_list=$(echo $ids | tr ' ' ',')

# 1. The MoE kernel check, in the background (one core), under this script's budget.
if want moe; then
    mkdir -p "$out/moe"
    SMOKE=0 bash tools/gpu/moe_permute.sh "$out/moe" > "$out/moe/stdout.log" 2>&1 &
    moe_pid=$!
fi

# 1b. The stage check's one nvcc compile, in the background.
if want stages; then
    mkdir -p "$out/stages"
    rm -f "$work/torch_stage_check"
    nvcc -std=c++17 -O3 -arch=sm_90 -DPKBW_BACKEND_CUDA -I abi/include -I toolkit/include \
        tools/gpu/torch_stage_check.cu -o "$work/torch_stage_check" -lcublas -lcublasLt > "$out/stages/build.log" 2>&1 &
    stages_pid=$!
fi

# 2. Warm the compile cache with the samples in the background (4 at a time) while the cross-check
# compiles the references: both are CPU-bound nvcc runs.
samples=()
for f in samples/solutions_cuda_bf16_h200_2_samples_baseline/*_cuda.cu samples/solutions_cuda_bf16_h200_2_samples_tuned/*_cuda.cu; do
    id=$(basename "$f"); id=${id%%_*}
    [[ " ${SKIP_SAMPLES:-} " == *" $id "* ]] && continue
    [ -f "$f" ] && samples+=("$f")
done
if want samples; then
    printf '%s\n' "${samples[@]}" | xargs -P 4 -I{} sh -c 'stem=$(basename "$1" _cuda.cu);
        timeout --foreground 200 "$2" dryrun --problem "$stem" --solution "$1" --nproc 1 --backend cuda --dtype bf16 \
            --store "$3/warm-$(echo "$1" | tr / _).db" > /dev/null 2>&1' _ {} "$p" "$work" &
    warm_pid=$!
fi

crosscheck() { # label, limit_s, problems, markdown file, extra env...
    local label=$1 limit=$2 problems=$3 file=$4
    shift 4
    gpu_section "$label" "$out"
    env "$@" timeout "$(gpu_limit "$limit")" python3 tools/pkb_crosscheck.py table --backend cuda --pkbw "$p" \
        --pkb-checkout "$pkb" --problems "$problems" --worlds 1 --dtypes "$dtypes" --m "$xc_m" --n "$xc_n" \
        --jobs "$jobs" --timeout 240 --cache-dir "$PKBW_CACHE_DIR" --json "${file%.md}.json" > "$file" 2>&1
    echo "crosscheck exit $?" >> "$file"
    python3 - "$file" <<'PY' | tee -a "$out/summary.txt"
import collections, sys
rows = [l for l in open(sys.argv[1]) if l.startswith("| ") and not l.startswith("| #")]
count = collections.Counter(l.split("|")[6].strip().split(":")[0] for l in rows if len(l.split("|")) > 7)
print(f"{len(rows)} rows: " + ", ".join(f"{k} {v}" for k, v in sorted(count.items())))
bad = [l for l in rows if "match" not in l.split("|")[6] or "mismatch" in l.split("|")[6]]
for l in bad[:40]:
    print(l.rstrip()[:400])
PY
}

if want crosscheck; then
    crosscheck "cross-check W=1 ($dtypes, ${xc_m}x$xc_n), every problem" 300 "$id_list" "$out/crosscheck.md"
fi
if want stages; then
    gpu_section "stages of 32 and 40-47: PyTorch against the toolkit, bit for bit" "$out"
    wait "$stages_pid"
    echo "build exit $?" >> "$out/stages/build.log"
    timeout "$(gpu_limit 60)" python3 tools/gpu/torch_stages.py "$work/stages" > "$out/stages/check.txt" 2>&1
    [ -x "$work/torch_stage_check" ] && timeout "$(gpu_limit 90)" "$work/torch_stage_check" "$work/stages" \
        >> "$out/stages/check.txt" 2>&1
    echo "torch_stage_check exit $?" >> "$out/stages/check.txt"
    grep -vE "^$" "$out/stages/check.txt" | tail -40 | tee -a "$out/summary.txt"
fi
if want samples; then
    gpu_section "samples: pkbw eval of every CUDA sample against its reference (W=1, 5 trials)" "$out"
    kill "$warm_pid" 2>/dev/null
    wait "$warm_pid" 2>/dev/null
    echo "| sample | status | s | flags | message |" > "$out/samples.md"
    echo "|---|---|---|---|---|" >> "$out/samples.md"
    # One row per sample as its eval ends (tools/gpu/final_row.py reads the run's final event).
    # shellcheck disable=SC2016 # expanded by the inner sh
    # Every sample, as many at once as keep the GPU busy (about 2.6 s each over the section, 106 samples):
    # the budget left bounds it, not a fixed share (110 s ended the H200 run of 2026-12-04 after 48).
    printf '%s\n' "${samples[@]}" | timeout "$(gpu_limit 400)" xargs -P 8 -I{} sh -c 'stem=$(basename "$1" _cuda.cu)
        gen=$(basename "$(dirname "$1")" | sed "s/solutions_cuda_bf16_h200_2_samples_//")
        t0=$(date +%s) log="$3/eval-$gen-$stem.jsonl"
        timeout --foreground 100 "$2" eval --problem "$stem" --solution "$1" --nproc 1 --backend cuda --dtype bf16 --json \
            --store "$3/eval-$gen-$stem.db" > "$log" 2>&1
        python3 tools/gpu/final_row.py "$log" "$gen $stem" $(( $(date +%s) - t0 )) --flags >> "$4/samples.md"' \
        _ {} "$p" "$work" "$out"
    # 76 and 87 in bf16 fail PKB's rule by the order of their fp32 sums alone (docs/problems.md, "What
    # is not exact"): their baseline samples also run on exact inputs, where every order sums alike, so
    # that a row says whether the sample computes the problem.
    for id in ${EXACT_TOO:-76 87}; do
        for f in samples/solutions_cuda_bf16_h200_2_samples_baseline/${id}_*_cuda.cu; do
            [ -f "$f" ] && [ "$(gpu_left)" -gt 40 ] || continue
            stem=$(basename "$f" _cuda.cu) t0=$(date +%s) log="$work/eval-exact-$stem.jsonl"
            timeout --foreground "$(gpu_limit 100)" "$p" eval --problem "$stem" --solution "$f" --nproc 1 --backend cuda \
                --dtype bf16 --inputs exact --json --store "$work/eval-exact-$stem.db" > "$log" 2>&1
            python3 tools/gpu/final_row.py "$log" "baseline $stem (exact inputs)" $(($(date +%s) - t0)) --flags >> "$out/samples.md"
        done
    done
    python3 - "$out/samples.md" <<'PY' | tee -a "$out/summary.txt"
import collections, sys
rows = [l.split("|") for l in open(sys.argv[1]) if l.startswith("| ") and not l.startswith("| sample")]
count = collections.Counter(r[2].strip() for r in rows)
print(f"{len(rows)} samples: " + ", ".join(f"{k} {v}" for k, v in sorted(count.items())))
for r in [r for r in rows if r[2].strip() != "pass"][:40]:
    print("|".join(r).rstrip()[:400])
# Issue 27: no sample may raise a flag of severity suspect or worse; the info flags per run, counted.
flags = [r[4].strip() for r in rows if len(r) > 5]
print("flags per sample: " + ", ".join(f"{k or '-'} x{v}" for k, v in sorted(collections.Counter(flags).items())))
for r in [r for r in rows if len(r) > 5 and ("suspect" in r[4] or "invalidating" in r[4])]:
    print("SUSPECT " + "|".join(r).rstrip()[:400])
PY
fi

if want rp_off; then
    crosscheck "cross-check with PyTorch's reduced-precision reductions off" 40 "31,32,40,41,42,47" \
        "$out/crosscheck_rp_off.md" PKBXC_CUBLAS_REDUCED_PRECISION=off
fi

if want moe; then
    gpu_section "MoE kernel check (tools/gpu/moe_permute.sh, bit for bit)" "$out"
    wait "$moe_pid"
    echo "moe_permute.sh exit $?" >> "$out/moe/summary.txt"
    grep -E "^RESULT|^FAIL|^section|exit|timed out|error" "$out/moe/summary.txt" | tee -a "$out/summary.txt"
fi
gpu_section_end
line "fidelity.sh: done with $(gpu_left) s of the budget left"
