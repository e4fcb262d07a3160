#!/usr/bin/env bash
# The flags of every sample's own code, without a GPU: `pkbw check --json` (compile and read the
# candidate's object) over each sample of samples/ (CUDA and host), a table row each as it ends, then
# the counts by severity. Issue: an honest sample raises no flag of severity "suspect" or worse; this
# checks what its code imports, the run-time flags (outputs, timing) need a run (tools/gpu/fidelity.sh).
# Usage: tools/static_flags.sh OUT.md [PKBW] [CACHE_DIR]; JOBS (2) checks at once. Exit 1 when any
# sample fails to compile or has a suspect or invalidating flag.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
out=$(realpath -m "${1:?usage: tools/static_flags.sh OUT.md [PKBW] [CACHE_DIR]}")
pkbw=$(realpath -m "${2:-build/bin/pkbw}")
cache=${3:-${PKBW_CACHE_DIR:-$HOME/.cache/pkbw}}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
check_one() { # FILE: one JSON line in $work
    local file=$1 stem
    stem=$(basename "$file" | sed -E 's/_(cuda\.cu|host\.cpp)$//')
    "$pkbw" check --problem "$stem" --solution "$file" --cache-dir "$cache" --json \
        > "$work/$(basename "$(dirname "$file")")__$(basename "$file").json" 2> /dev/null
}
export -f check_one
export pkbw cache work
ls samples/solutions_*/*_cuda.cu samples/solutions_*/*_host.cpp | xargs -P "${JOBS:-2}" -I{} bash -c 'check_one {}'
python3 - "$work" "$out" <<'PY'
import glob, json, os, sys
work, out = sys.argv[1:3]
rows, counts, bad = [], {}, []
for path in sorted(glob.glob(os.path.join(work, "*.json"))):
    folder, file = os.path.basename(path)[:-5].split("__")
    final = {}
    for line in open(path, errors="replace"):
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("event") == "check_finished":
            final = event
    flags = final.get("flags") or []
    by = {}
    for flag in flags:
        by[flag["severity"]] = by.get(flag["severity"], 0) + 1
        counts[flag["severity"]] = counts.get(flag["severity"], 0) + 1
    status = final.get("status", "no check_finished")
    texts = "; ".join(f"{f['severity']}: {f['text']}" for f in flags).replace("|", "/")
    rows.append(f"| {folder.replace('solutions_', '')} | {file} | {status} | "
                f"{', '.join(f'{k} {v}' for k, v in sorted(by.items())) or '-'} | {texts or final.get('message', '')[:120]} |")
    if status != "compiled" or by.get("suspect") or by.get("invalidating"):
        bad.append(f"{folder}/{file}: {status} {by}")
with open(out, "w") as f:
    f.write("| generation | sample | check | flags | what |\n|---|---|---|---|---|\n")
    f.write("\n".join(rows) + "\n")
    f.write(f"\n{len(rows)} samples; flags by severity: {counts or 'none'}; not clean: {len(bad)}\n")
    for line in bad:
        f.write(f"- {line}\n")
print(f"{len(rows)} samples; flags by severity: {counts or 'none'}; not clean: {len(bad)}")
for line in bad:
    print(f"  {line}")
sys.exit(1 if bad else 0)
PY
