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
# PKB's judge and candidate programs with every pkbw_* module they import, directly or not (a module left
# out of the install list is an ImportError in a user's first PKB run, which CI's source-tree runs miss).
python3 - "$prefix/share/pkbw/python" <<'PY' || exit 1
import ast, os, sys
folder = sys.argv[1]
pending, seen, missing = ["pkbw_pkb_rank", "pkbw_pkb_candidate"], set(), []
while pending:
    name = pending.pop()
    if name in seen:
        continue
    seen.add(name)
    path = os.path.join(folder, name + ".py")
    if not os.path.isfile(path):
        missing.append(name)
        continue
    for node in ast.walk(ast.parse(open(path).read(), path)):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
        pending += [n.split(".")[0] for n in names if n.startswith("pkbw_")]
if missing:
    sys.exit("FAIL: not installed in %s: %s" % (folder, ", ".join(sorted(missing))))
print("ok: %d Python modules of PKB's judge and candidate installed" % len(seen))
PY
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
