#!/usr/bin/env bash
# gui.bundle_opens: a host run exported with `pkbw export-bundle`, its store, run folder and candidate
# file deleted, opens in pkbw-gui from the bundle alone, and its Sources tab is drawn from the archive.
# Usage: bundle_opens.sh PKBW PKBW_GUI SAMPLE
set -euo pipefail
pkbw=$1 gui=$2 sample=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$sample" "$work/candidate.cpp"
"$pkbw" eval --backend host --problem 1 --solution "$work/candidate.cpp" --nproc 2 --dtype f32 --m 64 --n 64 --store "$work/s/runs.db" > /dev/null
"$pkbw" export-bundle 1 "$work/review.pkbw" --store "$work/s/runs.db"
rm -rf "$work/s" "$work/candidate.cpp"
QT_QPA_PLATFORM=offscreen "$gui" "$work/review.pkbw" --run 1 --tab 4 --screenshot "$work/sources.png" \
    > "$work/gui.out" 2> "$work/gui.err" \
    || { cat "$work/gui.err"; echo "FAIL: pkbw-gui could not open the bundle"; exit 1; }
[ -s "$work/sources.png" ] || { echo "FAIL: no screenshot of the bundle's Sources tab"; exit 1; }
grep -q "opened from .*runs.db" "$work/gui.err" || { cat "$work/gui.err"; echo "FAIL: the GUI did not open the bundle's store"; exit 1; }
cat "$work/gui.out"
# The Sources tab shows the code that ran, from the archive (the file itself is gone): the same bytes.
sha=$(sha256sum "$sample" | cut -d' ' -f1)
lines=$(wc -l < "$sample")
grep -q "^pkbw-gui: candidate: .*archived in the store.*; $lines lines; sha256 $sha; " "$work/gui.out" ||
    { echo "FAIL: the Sources tab does not show the archived candidate ($lines lines, sha256 $sha)"; exit 1; }
grep -q "^pkbw-gui: reference: [1-9][0-9]* lines; sha256 [0-9a-f]\{64\}; first: ." "$work/gui.out" ||
    { echo "FAIL: the Sources tab shows no reference"; exit 1; }
echo "ok: the bundle opened with no store, run folder or candidate file left"
