#!/usr/bin/env bash
# GPU check of the toolkit's MoE dispatch/combine kernels (moe_permute.cuh) against their host twins,
# bit for bit (tools/gpu/moe_permute_check.cu), then the references of 27-29 against their host
# oracles through gpu_smoke at shapes that cross the kernels' tile sizes. Needs one GPU, nvcc, g++.
# Usage: bash tools/gpu/moe_permute.sh OUT_DIR [CHECK_BINARY]
#   Prints RESULT lines; OUT_DIR gets summary.txt (each part's lines and wall time as it ends) and the
#   logs. CHECK_BINARY: a moe_permute_check built before (tools/gpu/fidelity.sh passes the one it
#   built); without it the check is compiled here. SMOKE=0 leaves out the gpu_smoke part.
#
# Bit for bit means the same operations in the same order on both sides, FMA contraction controlled on
# both: the check is compiled with the flags the engine compiles references with (nvcc's default
# -fmad=true, so a contraction the toolkit's kernels leave to the compiler would show as a mismatch;
# the kernels round each torch op with __fmul_rn/__fadd_rn), and the host side with -ffp-contract=off
# (its double arithmetic then rounds where the source says).
set -uo pipefail
source "$(dirname "$0")/budget.sh"
gpu_budget "$@"
out=$(realpath -m "${1:?usage: tools/gpu/moe_permute.sh OUT_DIR [CHECK_BINARY]}")
check_bin=${2:+$(realpath -m "$2")}
cd "$(dirname "$0")/../.." || exit 1
mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
inc=(-I abi/include -I core/include -I toolkit/include)
jobs=$(nproc)

# The gpu_smoke part's build starts first, in the background (only problems 27-29 in its registry):
# it is all host compiles, in parallel, while the kernel check compiles and runs.
smoke_build() {
    local dir=$1 stems=(27_moe_all2all_primitive 28_moe_pre_all2all 29_moe_post_all2all) cuda=${CUDA:-/usr/local/cuda}
    mkdir -p "$dir/obj"
    {
        echo '#include "problem_util.h"'
        echo 'namespace pkbw::problems {'
        for s in "${stems[@]}"; do echo "const Problem& problem_${s%%_*}();"; done
        echo 'std::vector<const Problem*> generated_problems() { return {'
        for s in "${stems[@]}"; do echo "&problem_${s%%_*}(),"; done
        echo '}; }'
        echo '}'
    } > "$dir/problem_list.cpp"
    local sources=(tests/problems/gpu_smoke/gpu_smoke.cpp problems/registry.cpp problems/src/problem_util.cpp
                   "$dir/problem_list.cpp" core/src/dtype.cpp core/src/tensor.cpp core/src/problem.cpp core/src/random.cpp)
    for s in "${stems[@]}"; do sources+=("problems/$s/problem.cpp"); done
    printf '%s\n' "${sources[@]}" | xargs -P "$jobs" -I{} sh -c 'g++ -std=c++20 -O2 -ffp-contract=off -I core/include \
        -I problems/include -I problems/src -I abi/include -I toolkit/include -I "$2/include" -DPKBW_BACKEND_CUDA \
        -c "$1" -o "$3/obj/$(echo "$1" | tr / _).o"' _ {} "$cuda" "$dir" || return 1
    g++ -rdynamic "$dir"/obj/*.o -L "$cuda/lib64" -lcudart -lnccl -ldl -lpthread -o "$dir/gpu_smoke" || return 1
    for s in "${stems[@]}"; do
        nvcc -std=c++17 -O3 -arch=sm_90 -shared -Xcompiler -fPIC -DPKBW_BACKEND_CUDA "${inc[@]}" \
            "problems/$s/reference.cu" -o "$dir/$s.ref.so" -lnccl -lcublas -lcublasLt &
        g++ -std=c++20 -O2 -ffp-contract=off -shared -fPIC -DPKBW_BACKEND_HOST "${inc[@]}" \
            "problems/$s/reference_host.cpp" -o "$dir/$s.host.so" &
    done
    wait
}
smoke=${SMOKE:-1}
if [ "$smoke" = 1 ]; then
    smoke_build "$out/gs" > "$out/gpu_smoke_build.log" 2>&1 &
    smoke_pid=$!
fi

gpu_section "moe_permute_check (bit for bit)" "$out"
if [ -z "$check_bin" ]; then
    check_bin=$out/moe_permute_check
    g++ -std=c++20 -O2 -ffp-contract=off -c core/src/dtype.cpp -I core/include -I abi/include -o "$out/dtype.o" &&
        nvcc -std=c++20 -O2 -arch=sm_90 -Xcompiler -ffp-contract=off -DPKBW_BACKEND_CUDA "${inc[@]}" \
            tools/gpu/moe_permute_check.cu "$out/dtype.o" -o "$check_bin" -lnccl -lcublas > "$out/build.log" 2>&1 ||
        { tail -30 "$out/build.log" | tee -a "$out/summary.txt"; exit 1; }
fi
timeout "$(gpu_limit 120)" "$check_bin" > "$out/moe_permute_check.log" 2>&1
rc=$?
grep -E "^FAIL|^RESULT" "$out/moe_permute_check.log" | tee -a "$out/summary.txt"
[ $rc -eq 124 ] && echo "moe_permute_check: timed out" | tee -a "$out/summary.txt"

if [ "$smoke" = 1 ]; then
    gpu_section "gpu_smoke 27-29 references vs host oracles (W=1, 3000x64)" "$out"
    if ! wait "$smoke_pid" || [ ! -x "$out/gs/gpu_smoke" ]; then
        tail -20 "$out/gpu_smoke_build.log" | tee -a "$out/summary.txt"
        rc=1
    else
        # W=1 (the exchange is a copy) at M=3000 (several scan tiles), bf16 and f32, 5 calls each.
        for dt in bf16 f32; do
            for s in 27_moe_all2all_primitive 28_moe_pre_all2all 29_moe_post_all2all; do
                timeout "$(gpu_limit 60)" "$out/gs/gpu_smoke" "$s" 1 3000 64 "$dt" pkb "$out/gs/$s.ref.so" \
                    "$out/gs/$s.host.so" - 5 > "$out/gpu_smoke_${dt}_$s.log" 2>&1
                smoke_rc=$?
                shown=$(grep -E 'RESULT|mismatches [1-9]' "$out/gpu_smoke_${dt}_$s.log" | head -3 | tr '\n' ' ')
                echo "gpu_smoke $dt $s rc=$smoke_rc: ${shown:-$(tail -1 "$out/gpu_smoke_${dt}_$s.log")}" |
                    tee -a "$out/summary.txt"
                [ "$smoke_rc" -eq 0 ] || rc=1
            done
        done
    fi
fi
gpu_section_end
exit "$rc"
