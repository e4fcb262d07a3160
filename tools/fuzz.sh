#!/usr/bin/env bash
# Builds every libFuzzer target and fuzzes each for a while.
#
#   tools/fuzz.sh [seconds-per-target] [target...]        (default 60 s, every fuzz_* target)
#
# Configures build-fuzz/ with clang (-DPKBW_BUILD_FUZZ=ON: ASan + UBSan + libFuzzer), builds the
# pkbw_fuzz_targets target, then runs every executable named fuzz_* in build-fuzz/bin (or only the
# targets named, e.g. `tools/fuzz.sh 600 fuzz_store fuzz_protocol`) with its seed corpus
# (tests/fuzz/seeds/<target>/) and dictionary (tests/fuzz/<target>.dict) when they exist.
# The growing corpus is kept in build-fuzz/fuzz-corpus/<target>/, logs and crash inputs in
# build-fuzz/fuzz-out/<target>/. Prints per target: runs, coverage, features, corpus size and result.
# Exits 1 if any target found something (a crash, a sanitizer report, a leak, a timeout or an OOM).
# Environment: CC/CXX (default clang-14/clang++-14), PKBW_FUZZ_JOBS (build jobs, default 2),
# PKBW_FUZZ_PARALLEL (targets fuzzed at the same time, one core each; default 1).
set -euo pipefail

seconds=${1:-60}
if ! [[ $seconds =~ ^[0-9]+$ ]] || [[ $seconds -eq 0 ]]; then
    echo "usage: $0 [seconds-per-target] [target...]" >&2
    exit 2
fi
shift || true
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build-fuzz
parallel=${PKBW_FUZZ_PARALLEL:-1}
export CC=${CC:-clang-14} CXX=${CXX:-clang++-14}

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [[ ! -f $build/CMakeCache.txt ]]; then
    cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPKBW_BUILD_FUZZ=ON \
        -DPKBW_BUILD_TESTS=ON -DPKBW_BUILD_GUI=OFF -DPKBW_ENABLE_CUDA=OFF -DPKBW_BUILD_BENCH=OFF >/dev/null
fi
cmake --build "$build" -t pkbw_fuzz_targets -j "${PKBW_FUZZ_JOBS:-2}"

targets=()
if [[ $# -gt 0 ]]; then
    for name in "$@"; do
        [[ -x $build/bin/$name ]] || { echo "no fuzz target $build/bin/$name" >&2; exit 2; }
        targets+=("$build/bin/$name")
    done
else
    mapfile -t targets < <(find "$build/bin" -maxdepth 1 -type f -perm -u+x -name 'fuzz_*' | sort)
fi
if [[ ${#targets[@]} -eq 0 ]]; then
    echo "no fuzz_* executables in $build/bin" >&2
    exit 1
fi

# Fuzzes one target; writes its one-line summary to fuzz-out/<target>/summary and returns 1 on a finding.
fuzz_one() {
    local exe=$1 name corpus out
    name=$(basename "$exe")
    corpus=$build/fuzz-corpus/$name
    out=$build/fuzz-out/$name
    mkdir -p "$corpus" "$out"
    # Findings of earlier runs are kept in previous/, so that this run reports only its own.
    mkdir -p "$out/previous"
    find "$out" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \
        -o -name 'slow-unit-*' \) -exec mv -t "$out/previous" {} +
    local args=(-max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$out/")
    [[ -f $root/tests/fuzz/$name.dict ]] && args+=(-dict="$root/tests/fuzz/$name.dict")
    local dirs=("$corpus")
    [[ -d $root/tests/fuzz/seeds/$name ]] && dirs+=("$root/tests/fuzz/seeds/$name")

    echo "== $name: fuzzing for ${seconds}s (log: $out/fuzz.log)"
    local status=0
    "$exe" "${args[@]}" "${dirs[@]}" >"$out/fuzz.log" 2>&1 || status=$?

    local stats runs cov ft corp artifacts result found=0
    stats=$(grep -E '^#[0-9]+.*(DONE|cov:)' "$out/fuzz.log" | tail -n 1 || true)
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/fuzz.log" | tail -n 1)
    cov=$(grep -oE 'cov: [0-9]+' <<<"$stats" | awk '{print $2}' || true)
    ft=$(grep -oE 'ft: [0-9]+' <<<"$stats" | awk '{print $2}' || true)
    corp=$(grep -oE 'corp: [0-9]+/[0-9a-zA-Z]+' <<<"$stats" | awk '{print $2}' || true)
    artifacts=$(find "$out" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
        -o -name 'oom-*' \) | sort)
    if [[ $status -ne 0 || -n $artifacts ]]; then
        found=1
        result="FOUND (exit $status) ${artifacts//$'\n'/ }"
        grep -m 1 -E 'ERROR: |runtime error|terminate called|==[0-9]+==' "$out/fuzz.log" | sed 's/^/    /' || true
    else
        result="nothing found"
    fi
    echo "   $name final: ${stats:-<no stats line>}"
    printf '%-24s runs=%-10s cov=%-6s ft=%-7s corpus=%-12s %s\n' "$name" "${runs:-?}" "${cov:-?}" \
        "${ft:-?}" "${corp:-?}" "$result" >"$out/summary"
    return $found
}

# With PKBW_FUZZ_PARALLEL > 1 the targets run as background jobs; the result comes from their summaries.
for exe in "${targets[@]}"; do
    rm -f "$build/fuzz-out/$(basename "$exe")/summary"
    if [[ $parallel -le 1 ]]; then
        fuzz_one "$exe" || true
        continue
    fi
    while [[ $(jobs -rp | wc -l) -ge $parallel ]]; do
        wait -n || true
    done
    fuzz_one "$exe" &
done
wait

echo
echo "== summary (${seconds}s per target)"
found=0
for exe in "${targets[@]}"; do
    summary=$build/fuzz-out/$(basename "$exe")/summary
    if [[ -f $summary ]]; then
        cat "$summary"
        grep -q FOUND "$summary" && found=1
    else
        echo "$(basename "$exe"): no summary (the fuzzing job died)"
        found=1
    fi
done
exit $found
