#!/usr/bin/env bash
# GPU check of the pkbw CLI on the cuda backend (2 GPUs): build, eval of samples, cache hit, a faulting
# and a hanging candidate. Run from the source root with $OUT set to an output folder.
set -x
cmake -S . -B build-gpu -G Ninja -DPKBW_BUILD_GUI=OFF -DPKBW_BUILD_BENCH=OFF > $OUT/cmake.log 2>&1 || { tail -30 $OUT/cmake.log; exit 1; }
cmake --build build-gpu -t pkbw pkbw-rank -j 30 > $OUT/build.log 2>&1 || { grep -E "error|FAILED" -A3 $OUT/build.log | head -40; exit 1; }
export PKBW_STORE=$OUT/store/runs.db PKBW_CACHE_DIR=/tmp/pkbwcache
P=build-gpu/bin/pkbw
$P --version
$P eval --problem 1 --solution cuda --solutions-dir samples/solutions_cuda_bf16_h200_2_samples_baseline --nproc 2; echo "exit=$?"
$P eval --problem 1 --solution cuda --solutions-dir samples/solutions_cuda_bf16_h200_2_samples_baseline --nproc 2 | grep compile; echo "exit=$?"
$P eval --problem 2 --solution cuda --solutions-dir samples/solutions_cuda_bf16_h200_2_samples_tuned --nproc 2 --json | cut -c1-200 | grep -v '"phase"' | tail -8; echo "exit=$?"
printf '#include "pkbw/solution.h"\n__global__ void k(int* p){ *p = 1; }\nextern "C" int pkbw_solution(const pkbw::Context& c){ k<<<1,1,0,c.stream()>>>(nullptr); return 0; }\n' > /tmp/1_allreduce_bad.cu
$P eval --problem 1 --solution /tmp/1_allreduce_bad.cu --nproc 2 --trials 1 2>&1 | tail -6; echo "exit=$?"
printf '#include "pkbw/solution.h"\n__global__ void k(){ while(true){} }\nextern "C" int pkbw_solution(const pkbw::Context& c){ k<<<1,1,0,c.stream()>>>(); return 0; }\n' > /tmp/1_allreduce_hang.cu
$P eval --problem 1 --solution /tmp/1_allreduce_hang.cu --nproc 2 --trials 1 --timeout 5 2>&1 | tail -4; echo "exit=$?"
sleep 1; nvidia-smi --query-compute-apps=pid,name --format=csv
$P runs
