#!/usr/bin/env bash
# pkbw's checked timing needs one shape for every timed call. A problem whose shapes change in some
# trials only (85's odd ranks hold nothing when trial % 4 == 3) is timed on the draws of the eval's
# first trial's shapes, every call checked; one whose shapes change in nearly every trial (70's values
# hold sum(lengths) entries) is refused with the problem named, never timed on slots of another shape.
# Usage: perf_one_shape.sh PKBW SOURCE_ROOT
set -uo pipefail
pkbw=$1 root=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
perf() {
    "$pkbw" perf --problem "$1" --solution host --solutions-dir "$root/samples/solutions_host_f32_none_samples_baseline" \
        --backend host --nproc 2 --dtype f32 --m 64 --n 128 --trials 2 --pkb-warmup 2 --pkb-iters 2 --warmup 2 \
        --pairs 2 --iters 5 --launches 1 --store "$work/s.db" --cache-dir "$work/cache" 2>&1
}
out=$(perf 85)
rc=$?
echo "$out" | tail -3
[ $rc -eq 0 ] || { echo "FAIL: perf of 85 did not pass (exit $rc)"; exit 1; }
out=$(perf 70)
rc=$?
echo "$out" | tail -3
[ $rc -ne 0 ] || { echo "FAIL: perf of 70 passed (exit 0)"; exit 1; }
echo "$out" | grep -q "problem 70_torchrec_kjt_all2all: its shapes differ between trials, and only" ||
    { echo "FAIL: no 'problem 70_torchrec_kjt_all2all: its shapes differ between trials, and only'"; exit 1; }
echo PASS
