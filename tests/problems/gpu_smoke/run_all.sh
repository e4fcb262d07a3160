#!/bin/bash
# On a machine with W GPUs, from the repo root: compile every problem's references and every CUDA
# sample, then check them with gpu_smoke.  run_all.sh W [M N DTYPE MODE [PROBLEM...]]
W=${1:-2}; M=${2:-1024}; N=${3:-1024}; DT=${4:-bf16}; MODE=${5:-pkb}; shift 5 2>/dev/null
out=${OUT_DIR:-/tmp/gs}
sh tests/problems/gpu_smoke/build.sh "$out" || exit 1
stems=("$@")
[ ${#stems[@]} -eq 0 ] && stems=($(ls problems | grep -E '^[0-9]+_'))
compile() {
    stem=$1; out=$2
    nvcc -std=c++17 -O3 -arch=sm_90 -shared -Xcompiler -fPIC -DPKBW_BACKEND_CUDA -I abi/include -I core/include -I toolkit/include \
        problems/$stem/reference.cu -o $out/$stem.ref.so -lnccl -lcublas -lcublasLt -lcufft || echo "COMPILE FAIL $stem ref"
    g++ -std=c++20 -O2 -shared -fPIC -DPKBW_BACKEND_HOST -I abi/include -I core/include -I toolkit/include \
        problems/$stem/reference_host.cpp -o $out/$stem.host.so || echo "COMPILE FAIL $stem host"
    for v in baseline tuned; do
        f=samples/solutions_cuda_bf16_h200_2_samples_$v/${stem}_cuda.cu
        [ -f $f ] && { nvcc -std=c++17 -O3 -arch=sm_90 -shared -Xcompiler -fPIC -DPKBW_BACKEND_CUDA -I abi/include \
            -I core/include -I toolkit/include $f -o $out/$stem.$v.so -lnccl -lcublas -lcublasLt -lcufft || echo "COMPILE FAIL $stem $v"; }
    done
}
export -f compile
printf '%s\n' "${stems[@]}" | xargs -P 12 -I{} bash -c "compile {} $out"
for stem in "${stems[@]}"; do
    ran=0
    for v in baseline tuned; do
        [ -f $out/$stem.$v.so ] || continue
        ran=1
        echo "== $stem $v"
        timeout 120 $out/gpu_smoke $stem $W $M $N $DT $MODE $out/$stem.ref.so $out/$stem.host.so $out/$stem.$v.so 20 \
            2>&1 | grep -vE 'mismatches 0/' | tail -8
    done
    if [ $ran = 0 ]; then
        echo "== $stem (reference only)"
        timeout 120 $out/gpu_smoke $stem $W $M $N $DT $MODE $out/$stem.ref.so $out/$stem.host.so - 20 2>&1 \
            | grep -vE 'mismatches 0/' | tail -8
    fi
done
