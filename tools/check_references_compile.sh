#!/usr/bin/env bash
# Compile-only check of every problem's references against the ABI and the reference toolkit, as the
# compile cache builds them (flags of engine/run/compile_cache.cpp), without linking or running.
# Needs nvcc for the CUDA references (skipped with a line when missing) and a C++20 compiler.
# Usage: tools/check_references_compile.sh [STEM...]   (default: every folder under problems/)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
nvcc=${PKBW_NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
cxx=${PKBW_CXX:-${CXX:-c++}}
includes=(-I abi/include -I core/include -I toolkit/include)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
stems=("$@")
[ ${#stems[@]} -eq 0 ] && stems=($(ls problems | grep -E '^[0-9]+_' | sort -n))
failed=0
for stem in "${stems[@]}"; do
    dir=problems/$stem
    if [ -f "$dir/reference_host.cpp" ]; then
        if ! "$cxx" -std=c++20 -O2 -fPIC -Wall -Wextra -DPKBW_BACKEND_HOST "${includes[@]}" -c \
            "$dir/reference_host.cpp" -o "$out/$stem.host.o"; then
            echo "FAIL host $stem"; failed=1
        fi
    fi
    if [ -f "$dir/reference.cu" ]; then
        if [ ! -x "$nvcc" ]; then
            echo "skip cuda $stem: no nvcc"
        elif ! "$nvcc" -std=c++17 -O3 -arch=sm_90 -Xcompiler -fPIC -DPKBW_BACKEND_CUDA "${includes[@]}" -c \
            "$dir/reference.cu" -o "$out/$stem.cuda.o"; then
            echo "FAIL cuda $stem"; failed=1
        fi
    fi
    echo "ok $stem"
done
exit $failed
