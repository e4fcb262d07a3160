#!/bin/sh
# Builds gpu_smoke from the sources (no CMake needed on the GPU machine). Run from the repo root.
set -e
out=${1:-/tmp/gpu_smoke}
mkdir -p "$out"
list="$out/problem_list.cpp"
{
    echo '#include "problem_util.h"'
    echo 'namespace pkbw::problems {'
    for d in problems/*/problem.cpp; do
        stem=$(basename "$(dirname "$d")"); id=${stem%%_*}
        echo "const Problem& problem_$id();"
    done
    echo 'std::vector<const Problem*> generated_problems() { return {'
    for d in problems/*/problem.cpp; do
        stem=$(basename "$(dirname "$d")"); id=${stem%%_*}
        echo "&problem_$id(),"
    done
    echo '}; }'
    echo '}'
} > "$list"
CUDA=${CUDA:-/usr/local/cuda}
g++ -std=c++20 -O2 -rdynamic -I core/include -I problems/include -I problems/src -I abi/include -I toolkit/include -I "$CUDA/include" \
    -DPKBW_BACKEND_CUDA tests/problems/gpu_smoke/gpu_smoke.cpp problems/registry.cpp problems/src/problem_util.cpp \
    "$list" problems/*/problem.cpp core/src/dtype.cpp core/src/tensor.cpp core/src/problem.cpp core/src/random.cpp \
    -L "$CUDA/lib64" -lcudart -lnccl -ldl -lpthread -o "$out/gpu_smoke"
