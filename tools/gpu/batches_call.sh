#!/usr/bin/env bash
# One device call for the problem batches and GPU fidelity (docs/problems.md): builds pkbw unless a warm
# machine kept it, then every CUDA sample's eval (tools/gpu/fidelity.sh's samples section; 68 left out)
# with 68's cross-check at PKB's size beside it (its input draw is the long part), then `pkbw perf` of
# the batches' samples, tuned first (tools/gpu/batch_perf.sh), until END seconds after the start. Writes
# under $OUT: f/ (samples), x/ (68), p/perf.md, store.db and runs.tgz (the JSON lines).
# Usage (the repo root; carry .deps and .pkb-head, from tools/gpu/prepare.sh):
#   END=560 bash tools/gpu/batches_call.sh       # evals and 68's cross-check, then perf with what is left
#   PERF_ONLY=1 END=560 bash tools/gpu/batches_call.sh   # a second call (warm: the build kept): perf only
# Environment: END (560), PERF_ONLY=1 skips the evals, SAMPLES_S (330) and X68_S (450) the two sections'
# budgets. Measured on the H200 (2026-12-03): the samples take about 2.6 s each over the section (42 of
# the 104 in 110 s) and 68's cross-check at PKB's size outran 180 s.
set -u
cd "$(dirname "$0")/../.." || exit 1
out=${OUT:?OUT: the device call output folder}
t0=$(date +%s)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PATH=/usr/local/cuda/bin:$PATH
elapsed() { echo $(($(date +%s) - t0)); }
mkdir -p "$out/f"
bash tools/gpu/build_dev.sh "$out" | tee -a "$out/f/summary.txt"
[ -x build-dev/bin/pkbw ] || exit 1
if [ "${PERF_ONLY:-0}" != 1 ]; then
    WORK=/tmp/f68 PROBLEMS=68 SECTIONS=crosscheck PKBW_GPU_BUDGET_S=${X68_S:-450} bash tools/gpu/fidelity.sh "$out/x" build-dev &
    crosscheck=$!
    SKIP_SAMPLES=68 SECTIONS=samples PKBW_GPU_BUDGET_S=${SAMPLES_S:-330} bash tools/gpu/fidelity.sh "$out/f" build-dev
    echo "samples end: $(elapsed) s" >> "$out/f/summary.txt"
    wait $crosscheck
    echo "68 end: $(elapsed) s" >> "$out/f/summary.txt"
fi
tuned=samples/solutions_cuda_bf16_h200_2_samples_tuned base=samples/solutions_cuda_bf16_h200_2_samples_baseline
list=()
# Those not yet timed on a GPU first: the H200 call of 2026-12-04 timed tuned 71 and 81 (81 crashed in its
# graph replays: changed since) and baseline 39, 56-58, 61, 62, 72, 74-76, 78, 87, and cut 77 at 120 s;
# tuned 54, 55, 59 and both 60s ran on the H200 earlier (docs/problems.md). 77 last of the new, with
# 240 s of its own (batch_perf.sh).
for s in $tuned/81_*_cuda.cu $base/{64,66,67,69,70,79,81,85,71}_*_cuda.cu $base/77_*_cuda.cu \
    $tuned/71_*_cuda.cu $base/{58,61,62,76,78,87}_*_cuda.cu $base/{39,56,57,72,74,75}_*_cuda.cu \
    $tuned/{54,55,59,60}_*_cuda.cu $base/{54,55,59,60}_*_cuda.cu; do
    [ -f "$s" ] && list+=("$s")
done
PKBW_CACHE_DIR=/tmp/pkbw-fidelity/cache LAUNCHES=1 PKBW_GPU_BUDGET_S=$((${END:-560} - $(elapsed))) \
    bash tools/gpu/batch_perf.sh "$out/p" build-dev/bin/pkbw "${list[@]}"
rm -f "$out/f/section_times.txt" "$out/x/section_times.txt" "$out/x/crosscheck.json"
cp /tmp/pkbw-batch-perf/store.db "$out/store.db" 2>/dev/null
tar czf "$out/runs.tgz" --exclude=cache --exclude='*.db' -C /tmp pkbw-batch-perf f68 2>/dev/null
echo "end: $(elapsed) s" >> "$out/f/summary.txt"
