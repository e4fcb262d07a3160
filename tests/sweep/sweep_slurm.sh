#!/usr/bin/env bash
# pkbw sweep --slurm through a real one-node SLURM started here (issue 17): problems 1-8 x two host
# generations as a job array (two pairs per task, two tasks at once), one task killed halfway, the
# dependent job collecting the task stores, a resume submitting what was left; the merged store must
# give the same verdicts as a local sweep of the same pairs. Skips (77) when not root or slurm is
# missing. Args: PKBW SOURCE_ROOT
set -u
pkbw=$1
root=$2
here=$(cd "$(dirname "$0")" && pwd)
if [ "$(id -u)" != 0 ]; then echo "SKIP: starting slurmctld/slurmd needs root"; exit 77; fi
for program in munged munge slurmctld slurmd sbatch scancel sinfo scontrol python3; do
    command -v "$program" >/dev/null || { echo "SKIP: $program is not installed (tools/bootstrap.sh installs slurm)"; exit 77; }
done
source "$here/slurm_local.sh"
work=$(mktemp -d /tmp/pkbw-sweep-slurm.XXXXXX)
trap 'stop_slurm; rm -rf "$work"' EXIT
t0=$(date +%s)
start_slurm "$work/slurm" 2 || exit 1
echo "slurm up in $(( $(date +%s) - t0 )) s"
export PKBW_CACHE_DIR=$work/cache
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
baseline=$root/samples/solutions_host_f32_none_samples_baseline
wrong=$work/solutions_host_f32_none_samples_wrong
cp -r "$baseline" "$wrong"
sed -i 's/+=/-=/' "$wrong/1_allreduce_host.cpp"
# Every candidate of the wrong generation takes 1.5 s to load (once per rank process, so once per pair):
# a task killed after its first pair is then still inside its second when the kill lands. With fast
# pairs the kill could land after the task's last pair, and the sweep would be done, not incomplete.
for f in "$wrong"/*.cpp; do
    printf '\n#include <unistd.h>\nstatic const int slow_load_for_the_test = (usleep(1500000), 0);\n' >> "$f"
done
common=(--solutions-dir "$baseline" --solutions-dir "$wrong" --problems 1-8 --nproc 2 --backend host)

# The local sweep the SLURM one is checked against.
"$pkbw" sweep "${common[@]}" --jobs 2 --store "$work/local/runs.db" -- --trials 1 --m 256 --n 256 > "$work/local.txt" 2>&1 ||
    { fail "local sweep exit $?"; cat "$work/local.txt"; }
echo "local sweep done at $(( $(date +%s) - t0 )) s"

main=$work/main/runs.db
"$pkbw" sweep --name slurm "${common[@]}" --store "$main" --slurm --chunk 2 --array-throttle 2 \
    --partition debug --local-dir "$work/node-local" -- --trials 1 --m 256 --n 256 > "$work/submit.txt" 2>&1 ||
    { fail "submit exit $?"; cat "$work/submit.txt"; }
cat "$work/submit.txt"
job=$(sed -n 's/.*submitted as job \([0-9]*\).*/\1/p' "$work/submit.txt")
[ -n "$job" ] || { fail "no job id in the submit output"; exit 1; }
logs=$(dirname "$main")/sweeps
# Kill a task halfway: the first whose first pair (of two) has finished and whose second is a slow one.
slow_tasks=$(python3 -c "
import glob, json, sys
plan = json.load(open(glob.glob(sys.argv[1] + '/*/submit_1.json')[0]))
print(' '.join(str(i) for i, t in enumerate(plan['tasks']) if len(t) == 2 and 'wrong' in t[1]['generation']))" "$logs")
[ -n "$slow_tasks" ] || fail "no task of the submission ends with a slow pair"
victim=
for _ in $(seq 1 600); do
    for index in $slow_tasks; do
        log=$(ls "$logs"/*/logs/submit_1_task_"$index".out 2>/dev/null | head -1)
        if [ -n "$log" ] && grep -q '^\[1/2\]' "$log" && ! grep -q '^\[2/2\]' "$log"; then
            victim=$index; break 2
        fi
    done
    sleep 0.1
done
if [ -n "$victim" ]; then
    echo "killing task $victim of job $job halfway"
    scancel "${job}_${victim}" || fail "scancel ${job}_${victim}"
else
    fail "no task was seen halfway"
fi
status() { "$pkbw" sweeps --store "$main" --json | python3 -c "import json,sys; print(json.loads(sys.stdin.readline())['status'])"; }
for _ in $(seq 1 900); do
    s=$(status); [ "$s" = done ] || [ "$s" = incomplete ] && break
    sleep 0.1
done
echo "after the first collect: $(status), at $(( $(date +%s) - t0 )) s"
[ "$(status)" = incomplete ] || fail "the sweep should be incomplete after a killed task, is $(status)"
id=$("$pkbw" sweeps --store "$main" --json | python3 -c "import json,sys; print(json.loads(sys.stdin.readline())['sweep_id'])")
"$pkbw" show --sweep "$id" --store "$main" --json > "$work/partial.json"

# Resume: only the pairs left are submitted; --wait blocks until the collecting job ends.
timeout 200 "$pkbw" sweep --resume "$id" --store "$main" --slurm --array-throttle 2 --wait > "$work/resume.txt" 2>&1 ||
    { fail "resume exit $?"; cat "$work/resume.txt"; }
cat "$work/resume.txt"
"$pkbw" show --sweep "$id" --store "$main" --json > "$work/slurm.json"
"$pkbw" show --sweep 1 --store "$work/local/runs.db" --json > "$work/local.json"
python3 - "$work/partial.json" "$work/slurm.json" "$work/local.json" <<'PY' || fail "merged store against the local sweep"
import json, os, sys
partial, slurm, local = (json.load(open(p)) for p in sys.argv[1:])
verdicts = lambda s: {(p["generation"], p["problem"]): p["status"] for p in s["pairs"]}
left = [k for k, v in verdicts(partial).items() if v == "not run"]
print("pending after the kill:", len(left))
assert 1 <= len(left) < 16, left
# Pairs judged before the kill kept their runs through the resume.
before = {(p["generation"], p["problem"]): p["run_id"] for p in partial["pairs"] if p["status"] != "not run"}
after = {(p["generation"], p["problem"]): p["run_id"] for p in slurm["pairs"]}
assert all(after[k] == v for k, v in before.items()), (before, after)
assert slurm["status"] == "done" and slurm["done"] == 16, (slurm["status"], slurm["done"])
assert verdicts(slurm) == verdicts(local), (verdicts(slurm), verdicts(local))
rows = lambda s: {g["generation"]: (g["attempted"], g["correct"], g["failures"]) for g in s["generations"]}
assert rows(slurm) == rows(local), (rows(slurm), rows(local))
print("same verdicts as the local sweep:", rows(slurm))
for p in slurm["pairs"]:
    assert p["run_id"], p
PY
# Every run's folder came along into the main store's runs/.
"$pkbw" runs --store "$main" --limit 100 --json | python3 -c "
import json, sys
runs = [json.loads(line) for line in sys.stdin]
print(len(runs), 'runs in the main store')
assert len(runs) >= 16, len(runs)" || fail "runs in the main store"
"$pkbw" show --sweep "$id" --store "$main"
echo "sweep_slurm wall time: $(( $(date +%s) - t0 )) s"
echo "sweep_slurm: $failures failures"
exit $((failures > 0))
