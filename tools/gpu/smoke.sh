#!/usr/bin/env bash
# GPU bring-up of the rank program: compiles references and sample candidates with nvcc, runs eval and
# perf of problems on W GPUs through launch_ranks.sh, prints one line per (problem, candidate).
# Usage: tools/gpu/smoke.sh BIN_DIR OUT_DIR W "1 2" [m n]
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
bin=$1; out=$2; world=$3; problems=$4; m=${5:-1024}; n=${6:-1024}
mkdir -p "$out/so"
compile() { # src out
    nvcc -std=c++17 -O3 -arch=sm_90 -shared -Xcompiler -fPIC -Xlinker -Bsymbolic -DPKBW_BACKEND_CUDA \
        -I"$here/engine/include" -I"$here/core/include" "$1" -o "$2" -lnccl -lcublas -lcublasLt 2>"$2.log" \
        || { echo "COMPILE FAILED $1"; cat "$2.log"; return 1; }
}
for p in $problems; do
    stem=$(basename "$here"/problems/${p}_*)
    compile "$here/problems/$stem/reference.cu" "$out/so/${stem}_ref.so" || continue
    for gen in "$here"/samples/solutions_cuda_*; do
        src="$gen/${stem}_cuda.cu"
        [ -f "$src" ] || continue
        label=$(basename "$gen")
        so="$out/so/${stem}_${label}.so"
        compile "$src" "$so" || continue
        dir="$out/run_${stem}_${label}"
        mkdir -p "$dir"
        python3 - "$dir/config.json" <<PY
import json,sys
json.dump({"version":1,"problem":"$stem","mode":"perf","backend":"cuda","world_size":$world,"m":$m,"n":$n,
 "dtype":"bf16","trials":5,"reference_library":"$out/so/${stem}_ref.so","candidate_library":"$so",
 "output_dir":"$dir","perf":{"pkb_warmup":500,"pkb_iterations":100,"warmup":50,"pairs":5,"iterations":100}},
 open(sys.argv[1],"w"))
PY
        start=$(date +%s%N)
        "$here/tools/gpu/launch_ranks.sh" "$bin" "$dir/config.json" "$world" > "$dir/stdout.log" 2>&1
        rc=$?
        end=$(date +%s%N)
        python3 "$here/tools/gpu/summarize_events.py" "$dir" "$stem" "$label" "$rc" "$(( (end - start) / 1000000 ))e-3"
    done
done
