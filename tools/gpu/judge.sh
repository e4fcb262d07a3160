#!/usr/bin/env bash
# The judge's GPU figures in one call of a lent GPU machine (docs/perf.md "What the timing cannot
# miss"): builds this pkbw and the one before the judge measured (OLD_SRC, a source tree of that
# commit), then
#   1. the CUDA adversarial cases at W ranks (tests/adversarial/cuda): expected vs observed diagnosis;
#   2. the tuned samples' perf, before and after: speedup, interval, verdict and the wall time of each
#      whole `pkbw perf` command, and the warm eval turnaround of problem 2 (tools/gpu/trust.sh);
#   3. PKB's Python path on the GPU (the miniature checkout of tests/engine/pkb_checkout): an honest
#      candidate's checked perf and one that skips timed calls.
# OUT_DIR gets summary.txt as it runs (so a call cut short returns what ran) and the build logs of a
# failed build; the per-run JSON lines and stores stay in WORK (default /tmp/pkbw-judge), since a device
# call brings back few files. Ends within about 8 minutes.
# Usage: tools/gpu/judge.sh OUT_DIR [OLD_SRC (default .old)]   Environment: W (default 1),
#        PROBLEMS (trust.sh's, default "1 2 12 46"), ADVERSARIAL_BUDGET (seconds, default 170),
#        ADVERSARIAL_ONLY (comma-separated case names, default all), SECTIONS (default "build adversarial trust").
set -uo pipefail
source "$(dirname "$0")/budget.sh"
gpu_budget "$@" # runs under tools/gpu/budget.sh's budget (450 s)
out=$(realpath -m "${1:?usage: tools/gpu/judge.sh OUT_DIR [OLD_SRC]}")
cd "$(dirname "$0")/../.." || exit 1
old_src=$(realpath -m "${2:-.old}")
sections=${SECTIONS:-build adversarial trust python}
export W=${W:-1} PROBLEMS=${PROBLEMS:-"1 2 12 46"}
export PATH=/usr/local/cuda/bin:$PATH NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
work=${WORK:-/tmp/pkbw-judge}
mkdir -p "$out" "$work"
line() { printf '%s\n' "$*" | tee -a "$out/summary.txt"; }
want() { [[ " $sections " == *" $1 "* ]]; }
started=$(date +%s)
elapsed() { echo $(( $(date +%s) - started )); }

configure_and_build() { # source_dir build_dir jobs log
    local deps=$PWD/.deps extra=()
    [ -d "$deps" ] && extra=(-DCMAKE_PREFIX_PATH="$deps" -DSQLite3_INCLUDE_DIR="$deps/include"
                             -DSQLite3_LIBRARY="$deps/lib/libsqlite3.a")
    { cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPKBW_BUILD_GUI=OFF -DPKBW_BUILD_TESTS=OFF \
        -DPKBW_BUILD_BENCH=OFF -DPKBW_BUILD_GENERATE=OFF ${extra[@]+"${extra[@]}"} &&
      cmake --build "$2" -j "$3"; } > "$4" 2>&1
}

if want build; then
    jobs=$(( $(nproc) / 2 > 0 ? $(nproc) / 2 : 1 ))
    configure_and_build . build-dev "$jobs" "$work/build-new.log" &
    new_build=$!
    if [ -d "$old_src" ]; then
        configure_and_build "$old_src" /tmp/pkbw-old-build "$jobs" "$work/build-old.log" &
        old_build=$!
        wait $old_build || { cp "$work/build-old.log" "$out/"; line "build of the old pkbw failed (build-old.log)"; }
    fi
    wait $new_build || { cp "$work/build-new.log" "$out/"; line "build failed: $(tail -20 "$work/build-new.log")"; exit 1; }
    line "build: $(elapsed) s; $(build-dev/bin/pkbw --version | tr '\n' ' '); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
fi
new=$PWD/build-dev/bin/pkbw
old=/tmp/pkbw-old-build/bin/pkbw

if want adversarial; then
    line "== CUDA adversarial cases, W=$W ($(elapsed) s in)"
    W=$W timeout "$(gpu_limit $(( ${ADVERSARIAL_BUDGET:-170} + 60 )))" python3 tests/adversarial/run_gpu_cases.py --pkbw "$new" \
        --out "$work/adversarial" --nproc "$W" --budget "${ADVERSARIAL_BUDGET:-170}" --only "${ADVERSARIAL_ONLY:-}" \
        2>&1 | tee -a "$out/summary.txt"
fi

if want trust; then
    line "== tuned samples before/after, W=$W ($(elapsed) s in)"
    if [ -x "$old" ]; then
        # trust.sh writes its table line by line into the summary as it goes.
        timeout "$(gpu_limit 300)" bash tools/gpu/trust.sh "$work/trust" "$old" "$new" > "$work/trust.log" 2>&1 &
        trust=$!
        tail -n +1 -F "$work/trust/trust.txt" 2>/dev/null >> "$out/summary.txt" &
        follower=$!
        wait $trust
        sleep 1
        kill $follower 2>/dev/null
        cat "$work/trust/trust.txt" 2>/dev/null
    else
        line "trust: no old pkbw at $old (its build failed or OLD_SRC is missing)"
    fi
fi
if want python; then
    line "== PKB's Python path, W=$W ($(elapsed) s in)"
    checkout=$PWD/tests/engine/pkb_checkout
    for solution in solutions_cuda_f32_none_samples_ci/1_allreduce_cuda.py misbehaving/1_allreduce_skips_by_count.py; do
        PKBW_PYTHON=${PKBW_PYTHON:-python3} timeout 120 "$new" perf --pkb-checkout "$checkout" --problem 1 \
            --solution "$checkout/$solution" --nproc "$W" --backend cuda --dtype f32 --store "$work/python.db" \
            --json > "$work/python.jsonl" 2> "$work/python.err"
        python3 - "$work/python.jsonl" "$solution" <<'PY' | tee -a "$out/summary.txt"
import json, sys
final, plan = {}, {}
for text in open(sys.argv[1]):
    try:
        e = json.loads(text)
    except ValueError:
        continue
    final = e if e.get("event") == "run_finished" else final
    plan = e if e.get("event") == "timing_plan" and not plan else plan
perf = (final.get("perf") or {}).get("pkbw") or {}
print(f"{sys.argv[2]}: {final.get('status')} {perf.get('speedup', 0):.3f}x [{perf.get('ci_low', 0):.3f}, "
      f"{perf.get('ci_high', 0):.3f}] checked={plan.get('checked')} calls={plan.get('calls_per_block')} "
      f"probe={plan.get('idle_probe_us')} | {final.get('message', '')[:220]}")
PY
    done
fi
line "judge.sh done in $(elapsed) s"
