#!/usr/bin/env bash
# pkbw's checked timing needs one shape for every timed call: a problem whose shapes change in some
# trials only (85's odd ranks hold nothing when trial % 4 == 3: the fourth timed set) is refused with
# the set named, never timed on slots of another shape.
# Usage: perf_one_shape.sh PKBW SOURCE_ROOT
set -uo pipefail
pkbw=$1 root=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out=$("$pkbw" perf --problem 85 --solution host --solutions-dir "$root/samples/solutions_host_f32_none_samples_baseline" \
    --backend host --nproc 2 --dtype f32 --launches 1 --store "$work/s.db" 2>&1)
rc=$?
echo "$out" | tail -3
[ $rc -ne 0 ] || { echo "FAIL: perf of 85 passed (exit 0)"; exit 1; }
echo "$out" | grep -q "its shapes differ between trials (timed set 3)" ||
    { echo "FAIL: no 'shapes differ between trials (timed set 3)'"; exit 1; }
echo PASS
