#!/bin/sh
# Renders every view of a fixture store under Xvfb to PNG files in BUILD/screenshots/{eval,heatmap,
# perf,dark} (one set per opened run; docs/gui.md, "Screenshots", says what each shows):
#   tools/screenshots.sh [BUILD]        (default build/)
# Needs pkbw-gui and make_gui_fixture built (ninja -C build pkbw-gui make_gui_fixture).
set -eu
build=${1:-build}
out="$build/screenshots"
mkdir -p "$out"
fixture=$(mktemp -d)
trap 'rm -rf "$fixture"' EXIT
"$build/bin/make_gui_fixture" "$fixture" > "$fixture/ids.txt"
eval_run=$(sed -n 's/.*eval_run=\([0-9]*\).*/\1/p' "$fixture/ids.txt")
heat_run=$(sed -n 's/.*heatmap_run=\([0-9]*\).*/\1/p' "$fixture/ids.txt")
perf_run=$(sed -n 's/.*perf_run=\([0-9]*\).*/\1/p' "$fixture/ids.txt")
export XDG_CONFIG_HOME="$fixture/config"
run_gui() {
    xvfb-run -a -s "-screen 0 1600x1000x24" "$build/bin/pkbw-gui" --store "$fixture/fixture.db" "$@"
}
run_gui --run "$eval_run" --screenshots "$out/eval"
run_gui --run "$heat_run" --screenshots "$out/heatmap"
run_gui --run "$perf_run" --screenshots "$out/perf"
run_gui --run "$heat_run" --dark --screenshots "$out/dark"
ls -1 "$out"/*/*.png
