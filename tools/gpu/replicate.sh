#!/usr/bin/env bash
# Speedups that replicate (docs/perf.md): RUNS independent `pkbw perf` commands of each tuned sample of
# PROBLEMS and of an A/A pair (problem 1's reference given as the candidate), one after another on one
# machine, then the table of tools/gpu/replicate_table.py (spread, interval coverage, verdict agreement).
# OUT_DIR/replicate.txt grows as runs finish; the JSON lines stay in WORK. Stops starting runs once
# DEADLINE seconds have passed since the script started, so a device call ends in time.
# Usage: tools/gpu/replicate.sh OUT_DIR PKBW   Environment: RUNS (10), PROBLEMS ("1 2 12 21 46 73"),
#        W (1), DEADLINE (420), PERF_ARGS (extra arguments for every perf command), LABEL,
#        BACKEND (cuda), SAMPLES (the tuned CUDA samples folder), PAIRS (default: PROBLEMS and aa),
#        FLOORS (problems whose A/A noise floor is measured first, `perf --solution reference`; default
#        PROBLEMS, and 1 for the aa pair), FIRST (the first run's number, default 1: a later device call
#        continues a table into the same WORK folder's naming, and the tables read both calls' files).
#        Runs already finished in WORK (a chained call on a warm machine) are skipped, not run again.
set -uo pipefail
source "$(dirname "$0")/budget.sh"
gpu_budget "$@" # runs under tools/gpu/budget.sh's budget (450 s)
out=$(realpath -m "${1:?usage: tools/gpu/replicate.sh OUT_DIR PKBW}")
pkbw=$(realpath -m "${2:?pkbw binary}")
cd "$(dirname "$0")/../.." || exit 1
runs=${RUNS:-10} W=${W:-1} deadline=${DEADLINE:-420}
problems=${PROBLEMS:-"1 2 12 21 46 73"}
backend=${BACKEND:-cuda}
tuned=${SAMPLES:-samples/solutions_cuda_bf16_h200_2_samples_tuned}
reference=problems/1_allreduce/reference.cu
[ "$backend" = host ] && reference=problems/1_allreduce/reference_host.cpp
work=${WORK:-/tmp/pkbw-replicate}/${LABEL:-run}
export PATH=/usr/local/cuda/bin:$PATH NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
mkdir -p "$out" "$work"
started=$(date +%s)
line() { printf '%s\n' "$*" | tee -a "$out/replicate.txt"; }
perf() { # label args...
    local label=$1
    shift
    local t0 t1
    t0=$(date +%s.%N)
    "$pkbw" perf "$@" --backend "$backend" --nproc "$W" --store "$work/store.db" --cache-dir "$work/cache" \
        ${PERF_ARGS:-} --json > "$work/$label.jsonl" 2> "$work/$label.err"
    t1=$(date +%s.%N)
    python3 - "$work/$label.jsonl" "$(python3 -c "print($t1-$t0)")" <<'PY'
import json, sys
path, wall = sys.argv[1], float(sys.argv[2])
lines = open(path, errors="replace").read().splitlines()
for i in range(len(lines) - 1, -1, -1):
    try:
        e = json.loads(lines[i])
    except ValueError:
        continue
    if e.get("event") == "run_finished":
        e["wall_s"] = wall
        lines[i] = json.dumps(e)
        break
open(path, "w").write("\n".join(lines) + "\n")
PY
}
pair_args() { # pair -> perf arguments
    case $1 in
        aa) echo "--problem 1 --solution $reference" ;;
        *) echo "--problem $1 --solution $backend --solutions-dir $tuned" ;;
    esac
}
pairs=${PAIRS:-"$problems aa"}
floors=${FLOORS-"$problems"}
line "== replication ${LABEL:-run}: $runs runs each of: $pairs, W=$W ${PERF_ARGS:-}; A/A floors first: $floors"
for p in $floors; do
    perf "floor$p-0" --problem "$p" --solution reference
    line "floor of $p: $(python3 -c "
import sys
sys.path.insert(0, 'tools/gpu')
from replicate_table import final_event
e = final_event(sys.argv[1])
p = (e.get('perf') or {}).get('pkbw') or {}
print(e.get('status'), round(p.get('speedup', 0), 3), [round(p.get('ci_low', 0), 3), round(p.get('ci_high', 0), 3)], [round(x['speedup'], 3) for x in p.get('launches', [])])
" "$work/floor$p-0.jsonl") ($(( $(date +%s) - started )) s)"
done
# Compile once (the first run of each pair is also its compile; not counted apart).
for i in $(seq "${FIRST:-1}" "$runs"); do
    for p in $pairs; do
        if [ $(( $(date +%s) - started )) -ge "$deadline" ]; then
            line "deadline reached after run $((i - 1)) of each pair"
            break 2
        fi
        # A run a previous call on this warm machine finished is kept: a chained call continues with the
        # first run not yet done, whatever the pairs' order (no renumbering, no two runs of one name).
        if grep -q '"run_finished"' "$work/$p-$i.jsonl" 2>/dev/null; then
            continue
        fi
        # shellcheck disable=SC2046
        perf "$p-$i" $(pair_args "$p")
        # The run's own line: each figure's speedup, interval and verdict, and the graph's passes, so
        # that a call cut short still says what every finished run concluded.
        line "$p-$i: $(python3 - "$work/$p-$i.jsonl" <<'PY'
import sys
sys.path.insert(0, "tools/gpu")
from replicate_table import final_event
e = final_event(sys.argv[1])
perf = e.get("perf") or {}
parts = [f"{e.get('status')}, headline {perf.get('headline', '?')}"]
for name in ("launched", "graph"):
    f = perf.get(name) or {}
    if "speedup" in f:
        parts.append(f"{name} {f['speedup']:.3f} [{f['ci_low']:.3f}, {f['ci_high']:.3f}] {f['verdict']}"
                     + (f" ({f.get('passes')} passes)" if name == "graph" else ""))
import json
waits = []
for text in open(sys.argv[1], errors="replace"):
    if '"timing_plan"' in text and '"rank": 0' in text.replace('"rank":0', '"rank": 0'):
        try:
            plan = json.loads(text)
        except ValueError:
            continue
        waits.append(f"{plan.get('draw_wait_seconds', 0):.1f}/{plan.get('draw_seconds', 0):.1f}")
if waits:
    parts.append(f"{e.get('perf', {}).get('pkbw', {}).get('extended_from', 0) or 'no'} extension; "
                 f"sets' wait/draw s per launch {' '.join(waits)}")
print("; ".join(parts))
PY
) ($(( $(date +%s) - started )) s)"
    done
done
line "== table ${LABEL:-run}"
python3 tools/gpu/replicate_table.py "$work" --markdown | tee -a "$out/replicate.txt"
line "== table ${LABEL:-run}, the launched figure (each call launched by its process)"
python3 tools/gpu/replicate_table.py "$work" --markdown --figure launched | tee -a "$out/replicate.txt"
line "== table ${LABEL:-run}, the graph figure (each side's block replayed from a CUDA graph)"
python3 tools/gpu/replicate_table.py "$work" --markdown --figure graph | tee -a "$out/replicate.txt"
tar -C "$work" -czf "$out/replicate-${LABEL:-run}.tgz" --exclude cache --exclude runs . 2>/dev/null
