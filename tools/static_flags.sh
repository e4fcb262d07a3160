#!/usr/bin/env bash
# The flags of every sample's own code, without a GPU: `pkbw check --json` (compile and read the
# candidate's object) over each sample of samples/ (CUDA and host), a table row each as it ends, then
# the counts by severity. Issue: an honest sample raises no flag of severity "suspect" or worse; this
# checks what its code imports, the run-time flags (outputs, timing) need a run (tools/gpu/fidelity.sh).
# Usage: tools/static_flags.sh OUT.md [PKBW] [CACHE_DIR]; JOBS (2) checks at once. Exit 1 when any
# sample fails to compile or has a suspect or invalidating flag. With PKB_CHECKOUT=DIR it also checks
# PKB's published solutions there (PKB_FOLDERS, default every solutions_* folder of DIR; problems 1-87
# at PKB_NPROC ranks, 1): placement, refusals (multicast, a world size) and their sources' flags, one
# row per (folder, problem); those rows do not change the exit status (the table is the finding).
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
if [ -n "${PKB_CHECKOUT:-}" ]; then
    for folder in ${PKB_FOLDERS:-"$PKB_CHECKOUT"/solutions_*}; do
        for n in $(seq 1 87); do
            "$pkbw" check --pkb-checkout "$PKB_CHECKOUT" --solutions-dir "$folder" --problem "$n" \
                --nproc "${PKB_NPROC:-1}" --json > "$work/pkb_$(basename "$folder")__$(printf %02d "$n").json" 2> /dev/null
        done
    done
fi
python3 - "$work" "$out" <<'PY'
import glob, json, os, sys
work, out = sys.argv[1:3]
rows, counts, bad = [], {}, []
pkb_rows, pkb_counts = [], {}
for path in sorted(glob.glob(os.path.join(work, "*.json"))):
    folder, file = os.path.basename(path)[:-5].split("__")
    pkb = folder.startswith("pkb_")
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
        (pkb_counts if pkb else counts)[flag["severity"]] = (pkb_counts if pkb else counts).get(flag["severity"], 0) + 1
    status = final.get("status", "no check_finished")
    texts = "; ".join(f"{f['severity']}: {f['text']}" for f in flags).replace("|", "/")
    row = (f"| {folder.replace('pkb_', '').replace('solutions_', '')} | {file} | {status} | "
           f"{', '.join(f'{k} {v}' for k, v in sorted(by.items())) or '-'} | "
           f"{(texts or ' '.join(str(final.get('message', '')).split()))[:160].replace('|', '/')} |")
    if pkb:
        pkb_counts[status] = pkb_counts.get(status, 0) + 1
        pkb_rows.append(row)
        continue
    rows.append(row)
    if status != "compiled" or by.get("suspect") or by.get("invalidating"):
        bad.append(f"{folder}/{file}: {status} {by}")
with open(out, "w") as f:
    f.write("| generation | sample | check | flags | what |\n|---|---|---|---|---|\n")
    f.write("\n".join(rows) + "\n")
    f.write(f"\n{len(rows)} samples; flags by severity: {counts or 'none'}; not clean: {len(bad)}\n")
    for line in bad:
        f.write(f"- {line}\n")
    if pkb_rows:
        f.write("\n| PKB folder | problem | check | flags | what |\n|---|---|---|---|---|\n")
        f.write("\n".join(pkb_rows) + "\n")
        f.write(f"\n{len(pkb_rows)} PKB (folder, problem) pairs; statuses and flags: {pkb_counts}\n")
print(f"{len(rows)} samples; flags by severity: {counts or 'none'}; not clean: {len(bad)}")
if pkb_rows:
    print(f"{len(pkb_rows)} PKB (folder, problem) pairs; statuses and flags: {pkb_counts}")
for line in bad:
    print(f"  {line}")
sys.exit(1 if bad else 0)
PY
