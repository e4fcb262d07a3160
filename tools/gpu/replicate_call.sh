#!/usr/bin/env bash
# One device call of the replication table (docs/perf.md "Replication, measured"), made to be chained:
# builds pkbw into build-dev unless a warm machine kept it, compiles every pair's sources at once
# (dryruns into the replication's compile cache) unless WORK has them, then runs tools/gpu/replicate.sh
# from run FIRST until END seconds after this script started, writing under $OUT/r. A later call on the
# same warm machine (within its 30 s) continues in the same WORK; a fresh machine starts over, and the
# calls' tarballs ($OUT/r/replicate-run.tgz) are merged by file name (pair-run.jsonl).
# Usage (the repo root, .deps carried: tools/gpu/prepare.sh; .cache/rep-cache.tgz carried if an earlier
# call left one in its OUT):
#   END=555 bash tools/gpu/replicate_call.sh                      # runs 1..
#   END=565 bash tools/gpu/replicate_call.sh     # chained on the warm machine: continues where it stopped
# Environment: END (555), FIRST (1), RUNS (10), PAIRS (replicate.sh's), FLOORS (empty: the band is the
# minimum effect), WORK (/tmp/rep), OUT (the device call's output folder).
set -u
cd "$(dirname "$0")/../.." || exit 1
out=${OUT:?OUT: the device call output folder}
work=${WORK:-/tmp/rep}
t0=$(date +%s)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PATH=/usr/local/cuda/bin:$PATH
elapsed() { echo $(($(date +%s) - t0)); }
mkdir -p "$out/r" "$work/run"
bash tools/gpu/build_dev.sh "$out" | tee -a "$out/r/replicate.txt"
[ -x build-dev/bin/pkbw ] || exit 1
echo "$(ls "$work"/run/*.jsonl 2>/dev/null | wc -l) run files in WORK" | tee -a "$out/r/replicate.txt"
pkbw=$PWD/build-dev/bin/pkbw
tuned=samples/solutions_cuda_bf16_h200_2_samples_tuned
# A fresh machine takes the pairs' compiled libraries from an earlier call's tarball when one is carried
# (.cache/rep-cache.tgz, from $OUT/r/rep-cache.tgz): the compile cache checks each entry's key (sources,
# flags, compiler) itself, so a stale one is compiled again, not used.
if [ ! -d "$work/run/cache" ] && [ -s .cache/rep-cache.tgz ]; then
    tar xzf .cache/rep-cache.tgz -C "$work/run" && echo "compile cache from .cache/rep-cache.tgz" | tee -a "$out/r/replicate.txt"
fi
if [ ! -d "$work/run/cache" ] || [ -z "$(ls "$work/run/cache")" ]; then
    dry() { timeout 150 "$pkbw" dryrun "$@" --backend cuda --nproc 1 --store "$work/dry.db" --cache-dir "$work/run/cache"; }
    for p in 1 2 12 21 46 73; do
        dry --problem "$p" --solution cuda --solutions-dir "$tuned" > "$work/dry$p.log" 2>&1 &
    done
    dry --problem 1 --solution problems/1_allreduce/reference.cu > "$work/dryaa.log" 2>&1 &
    wait
    echo "compiled: $(elapsed) s" | tee -a "$out/r/replicate.txt"
fi
left=$((${END:-555} - $(elapsed)))
WORK=$work FLOORS="${FLOORS-}" RUNS=${RUNS:-10} FIRST=${FIRST:-1} DEADLINE=$((left - 45)) PKBW_GPU_BUDGET_S=$left \
    bash tools/gpu/replicate.sh "$out/r" "$pkbw"
[ -d "$work/run/cache" ] && tar czf "$out/r/rep-cache.tgz" -C "$work/run" cache
echo "end $(elapsed) s" | tee -a "$out/r/replicate.txt"
