#!/usr/bin/env bash
# GPU check of the toolkit's MoE dispatch/combine kernels (moe_permute.cuh) against their host twins,
# bit for bit (tools/gpu/moe_permute_check.cu), then the references of 27-29 against their host
# oracles through gpu_smoke at shapes that cross the kernels' tile sizes. Needs one GPU, nvcc, g++.
# Usage: bash tools/gpu/moe_permute.sh OUT_DIR      (prints RESULT lines; OUT_DIR gets the logs)
set -uo pipefail
out=$(realpath -m "${1:?usage: tools/gpu/moe_permute.sh OUT_DIR}")
cd "$(dirname "$0")/../.." || exit 1
mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
inc=(-I abi/include -I core/include -I toolkit/include)
g++ -std=c++20 -O2 -c core/src/dtype.cpp -I core/include -I abi/include -o "$out/dtype.o" || exit 1
nvcc -std=c++20 -O2 -arch=sm_90 -DPKBW_BACKEND_CUDA "${inc[@]}" tools/gpu/moe_permute_check.cu "$out/dtype.o" \
    -o "$out/moe_permute_check" -lnccl -lcublas > "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
"$out/moe_permute_check" | tee "$out/moe_permute_check.log" | grep -E "^FAIL|^RESULT"
rc=${PIPESTATUS[0]}
# The problems: W=1 (the exchange is a copy) at M=3000 (several scan tiles), bf16 and f32.
for dt in bf16 f32; do
    OUT_DIR="$out/gs" bash tests/problems/gpu_smoke/run_all.sh 1 3000 64 $dt pkb \
        27_moe_all2all_primitive 28_moe_pre_all2all 29_moe_post_all2all > "$out/gpu_smoke_$dt.log" 2>&1
    grep -E "^==|RESULT|COMPILE FAIL|mismatches [1-9]" "$out/gpu_smoke_$dt.log" | sed "s/^/gpu_smoke $dt: /"
done
exit "$rc"
