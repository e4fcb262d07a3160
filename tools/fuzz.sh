#!/usr/bin/env bash
# Builds every libFuzzer target and fuzzes each for a while.
#
#   tools/fuzz.sh [seconds-per-target]        (default 60)
#
# Configures build-fuzz/ with clang (-DPKBW_BUILD_FUZZ=ON: ASan + UBSan + libFuzzer), builds the
# pkbw_fuzz_targets target, then runs every executable named fuzz_* in build-fuzz/bin with its seed
# corpus (tests/fuzz/seeds/<target>/) and dictionary (tests/fuzz/<target>.dict) when they exist.
# The growing corpus is kept in build-fuzz/fuzz-corpus/<target>/, logs and crash inputs in
# build-fuzz/fuzz-out/<target>/. Prints per target: runs, coverage, features, corpus size and result.
# Exits 1 if any target found something (a crash, a sanitizer report, a leak, a timeout or an OOM).
# Environment: CC/CXX (default clang-14/clang++-14), PKBW_FUZZ_JOBS (build jobs, default 2).
set -euo pipefail

seconds=${1:-60}
if ! [[ $seconds =~ ^[0-9]+$ ]] || [[ $seconds -eq 0 ]]; then
    echo "usage: $0 [seconds-per-target]" >&2
    exit 2
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build-fuzz
export CC=${CC:-clang-14} CXX=${CXX:-clang++-14}

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [[ ! -f $build/CMakeCache.txt ]]; then
    cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPKBW_BUILD_FUZZ=ON \
        -DPKBW_BUILD_TESTS=ON -DPKBW_BUILD_GUI=OFF -DPKBW_ENABLE_CUDA=OFF -DPKBW_BUILD_BENCH=OFF >/dev/null
fi
cmake --build "$build" -t pkbw_fuzz_targets -j "${PKBW_FUZZ_JOBS:-2}"

mapfile -t targets < <(find "$build/bin" -maxdepth 1 -type f -perm -u+x -name 'fuzz_*' | sort)
if [[ ${#targets[@]} -eq 0 ]]; then
    echo "no fuzz_* executables in $build/bin" >&2
    exit 1
fi

found=0
summary=()
for exe in "${targets[@]}"; do
    name=$(basename "$exe")
    corpus=$build/fuzz-corpus/$name
    out=$build/fuzz-out/$name
    mkdir -p "$corpus" "$out"
    # Findings of earlier runs are kept in previous/, so that this run reports only its own.
    mkdir -p "$out/previous"
    find "$out" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \
        -o -name 'slow-unit-*' \) -exec mv -t "$out/previous" {} +
    args=(-max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$out/")
    [[ -f $root/tests/fuzz/$name.dict ]] && args+=(-dict="$root/tests/fuzz/$name.dict")
    dirs=("$corpus")
    [[ -d $root/tests/fuzz/seeds/$name ]] && dirs+=("$root/tests/fuzz/seeds/$name")

    echo "== $name: fuzzing for ${seconds}s (log: $out/fuzz.log)"
    status=0
    "$exe" "${args[@]}" "${dirs[@]}" >"$out/fuzz.log" 2>&1 || status=$?

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
    echo "   final: ${stats:-<no stats line>}"
    summary+=("$(printf '%-24s runs=%-10s cov=%-6s ft=%-7s corpus=%-12s %s' "$name" "${runs:-?}" "${cov:-?}" \
        "${ft:-?}" "${corp:-?}" "$result")")
done

echo
echo "== summary (${seconds}s per target)"
printf '%s\n' "${summary[@]}"
exit $found
