#!/usr/bin/env bash
# gui.installed_tree: pkbw installed with `cmake --install` into a fresh prefix, and its pkbw-gui
# started from there. The Problems tab must list what the installed pkbw lists, from the installed
# share/pkbw (the GUI compiles in no source path; issue 19 point 7).
# Usage: installed_tree.sh CMAKE BUILD_DIR
set -euo pipefail
cmake=$1 build=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
"$cmake" --install "$build" --prefix "$prefix" > "$work/install.log" 2>&1 ||
    { tail -20 "$work/install.log"; echo "FAIL: cmake --install"; exit 1; }
for f in bin/pkbw bin/pkbw-gui share/pkbw/problems/1_allreduce/reference_host.cpp; do
    [ -e "$prefix/$f" ] || { echo "FAIL: $f is not installed"; exit 1; }
done
expected=$("$prefix/bin/pkbw" problems --json | python3 -c 'import json, sys; print(sum(1 for line in sys.stdin if json.loads(line)["event"] == "problem"))')
export QT_QPA_PLATFORM=offscreen XDG_CONFIG_HOME="$work/config" XDG_DATA_HOME="$work/data"
# A scratch directory as the working directory: nothing relative to the source tree or the build.
cd "$work"
"$prefix/bin/pkbw-gui" --tab 6 --screenshot "$work/problems.png" > "$work/gui.out" 2> "$work/gui.err" ||
    { cat "$work/gui.err"; echo "FAIL: the installed pkbw-gui did not start"; exit 1; }
cat "$work/gui.out"
want="pkbw-gui: problems: $expected from $prefix/bin/pkbw problems --json; folders under $prefix/share/pkbw/problems"
grep -qxF "$want" "$work/gui.out" || { echo "FAIL: expected the line: $want"; exit 1; }
[ -s "$work/problems.png" ] || { echo "FAIL: no screenshot of the Problems tab"; exit 1; }
echo "ok: the installed pkbw-gui lists the installed pkbw's $expected problems from $prefix/share/pkbw"
