#!/usr/bin/env bash
# pkbw sweep end to end on the host backend (docs/sweeps.md): two generations x problems 1-4, two runs
# at once; a wrong and a non-compiling solution do not stop the rest; SIGTERM halfway and a resume by
# name run only what was left; --remote runs tasks and merges their stores. Args: PKBW SOURCE_ROOT
set -u
pkbw=$1
root=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PKBW_STORE=$work/store/runs.db PKBW_CACHE_DIR=$work/cache
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
baseline=$root/samples/solutions_host_f32_none_samples_baseline
broken=$work/solutions_host_f32_none_samples_broken
cp -r "$baseline" "$broken"
# 1: a wrong sum (mismatch); 3: does not compile.
sed -i 's/+=/-=/' "$broken/1_allreduce_host.cpp"
echo 'this is not C++;' >> "$broken/3_broadcast_host.cpp"
grep -q -- '-=' "$broken/1_allreduce_host.cpp" || fail "the test could not break 1_allreduce_host.cpp"
json_get() { python3 -c "import json,sys; d=[json.loads(l) for l in open(sys.argv[1]) if l.startswith('{')]; $1" "$2"; }

# 1. A full sweep, two runs at once.
start=$(date +%s)
"$pkbw" sweep --solutions-dir "$baseline" --solutions-dir "$broken" --problems 1-4 --nproc 2 --backend host \
    --jobs 2 --json -- --trials 1 --m 256 --n 256 > "$work/full.jsonl" 2> "$work/full.err"
code=$?
echo "full sweep: exit $code in $(( $(date +%s) - start )) s"
[ "$code" = 0 ] || { fail "sweep exit $code"; cat "$work/full.err"; }
json_get 'f=[e for e in d if e["event"]=="sweep_finished"][0]; g={x["generation"]:x for x in f["generations"]};
b=g["solutions_host_f32_none_samples_baseline"]; w=g["solutions_host_f32_none_samples_broken"];
print("baseline", b["attempted"], b["correct"], "broken", w["attempted"], w["correct"], w["failures"]);
assert (b["attempted"], b["correct"], b["fast_p"]["0"]) == (4, 4, 1.0), b
assert (w["attempted"], w["correct"], w["fast_p"]["0"]) == (4, 2, 0.5), w
assert w["failures"] == {"mismatch": 1, "compile_error": 1}, w["failures"]
assert f["done"] == 8 and f["total"] == 8
fin=[e for e in d if e["event"]=="pair_finished"]; assert len(fin) == 8, len(fin)
assert all(e["run_id"] for e in fin), fin
assert fin[-1]["eta_s"] == 0, fin[-1]' "$work/full.jsonl" || fail "full sweep table"
"$pkbw" runs --limit 100 --json > "$work/runs.json"
python3 -c "import json,sys; r=[json.loads(l) for l in open(sys.argv[1])]; assert len(r)==8, len(r)" "$work/runs.json" ||
    fail "8 runs expected in the store"
"$pkbw" show --sweep 1 > "$work/show.txt" || fail "show --sweep"
grep -q "solutions_host_f32_none_samples_broken *4 *2" "$work/show.txt" || { fail "show --sweep table"; cat "$work/show.txt"; }
grep -q "3_broadcast  compile_error" "$work/show.txt" || fail "show --sweep lists the failing pair"
"$pkbw" sweeps | grep -q "done *8/8" || fail "pkbw sweeps"

# 2. Interrupted halfway (SIGTERM, as scancel or kill sends), then resumed by name.
"$pkbw" sweep --name again --solutions-dir "$baseline" --solutions-dir "$broken" --problems 1-4 --nproc 2 \
    --backend host --jobs 1 --json -- --trials 1 --m 256 --n 256 > "$work/part.jsonl" 2> "$work/part.err" &
pid=$!
for _ in $(seq 1 600); do
    [ "$(grep -c '"pair_finished"' "$work/part.jsonl")" -ge 2 ] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.1
done
kill -TERM $pid
wait $pid
code=$?
[ "$code" = 130 ] || fail "interrupted sweep: exit $code, expected 130"
before=$(python3 -c "import json,sys; print(' '.join(sorted(str(e['run_id']) for e in map(json.loads, open(sys.argv[1])) if e['event']=='pair_finished' and e['state']=='done')))" "$work/part.jsonl")
ndone=$(echo "$before" | wc -w)
echo "interrupted after $ndone judged pairs: runs $before"
[ "$ndone" -ge 2 ] && [ "$ndone" -lt 8 ] || fail "expected an interrupt halfway, got $ndone judged pairs"
"$pkbw" sweep --name again --json > "$work/resume.jsonl" 2> "$work/resume.err" || fail "resume exit $?"
json_get "s=[e for e in d if e['event']=='sweep_started'][0]; assert s['pending'] == 8 - $ndone, s
f=[e for e in d if e['event']=='sweep_finished'][0]; assert f['done'] == 8, f['done']
kept=set(str(p['run_id']) for p in f['pairs']); assert set('$before'.split()) <= kept, (kept, '$before')
g={x['generation']:x['correct'] for x in f['generations']}; assert sorted(g.values()) == [2, 4], g" \
    "$work/resume.jsonl" || { fail "resume"; cat "$work/resume.err"; }

# 3. --remote: each task through a command template, into its own store, merged into the sweep's.
"$pkbw" sweep --name remote --solutions-dir "$broken" --problems 1-2 --nproc 2 --backend host \
    --remote 'env PKBW_TASK={i}/{n} {cmd}' --local-dir "$work/local" -- --trials 1 --m 256 --n 256 > "$work/remote.txt" 2>&1 ||
    { fail "remote sweep exit $?"; cat "$work/remote.txt"; }
grep -q "collected 2 task stores" "$work/remote.txt" || { fail "remote: 2 task stores"; cat "$work/remote.txt"; }
grep -q "solutions_host_f32_none_samples_broken *2 *1 .*mismatch 1" "$work/remote.txt" || { fail "remote table"; cat "$work/remote.txt"; }
id=$("$pkbw" sweeps --json | python3 -c "import json,sys; print([s['sweep_id'] for s in map(json.loads, sys.stdin) if s['name']=='remote'][0])")
"$pkbw" show --sweep "$id" --json > "$work/remote.json"
python3 - "$work/remote.json" "$pkbw" <<'PY' || fail "remote runs and their folders in the main store"
import json, os, subprocess, sys
sweep = json.loads(open(sys.argv[1]).readline())
for pair in sweep["pairs"]:
    run = json.loads(subprocess.check_output([sys.argv[2], "show", str(pair["run_id"]), "--json"]))
    folder = run["run"]["run_dir"] if "run" in run else run["run_dir"]
    assert folder.startswith(os.environ["PKBW_STORE"].rsplit("/", 1)[0] + "/runs/"), folder
    assert os.path.isfile(os.path.join(folder, "config.json")), folder
PY
[ -z "$(ls -A "$work/local" 2>/dev/null)" ] || fail "task stores left on the local disk: $(ls "$work/local")"
# 4. PKB's Python solutions: placed against a PKB checkout's reference/ (plan only: no torch needed).
"$pkbw" sweep --plan --json --pkb-checkout "$root/tests/engine/pkb_checkout" --nproc 1 \
    --solutions-dir "$root/tests/engine/pkb_checkout/solutions_cuda_f32_none_samples_ci" > "$work/pkb.json" 2>&1 ||
    { fail "pkb plan exit $?"; cat "$work/pkb.json"; }
json_get 'p=d[0]; assert sorted(x["problem"] for x in p["pairs"]) == ["10_varying_rows", "1_allreduce", "9_scale_gather"], p' "$work/pkb.json" ||
    fail "pkb checkout plan"
# 5. A perf sweep's pair whose timing is not trusted (a candidate skipping calls it recognises) reports
# why its speedup is withheld, never the figures as its speedup, on the progress line and in pair_finished.
untrusted=$work/solutions_host_f32_none_untrusted
mkdir -p "$untrusted" && cp "$root/tests/adversarial/host/skip_by_count.cpp" "$untrusted/1_allreduce_host.cpp"
"$pkbw" sweep --name untrusted --solutions-dir "$untrusted" --problems 1 --nproc 2 --backend host --mode perf -- \
    --dtype f32 --trials 1 --m 128 --n 128 --launches 1 --pairs 2 --iters 10 --no-pkb > "$work/untrusted.txt" 2>&1 ||
    { fail "untrusted sweep exit $?"; cat "$work/untrusted.txt"; }
grep -q "1_allreduce: invalid_timing (.*) speedup withheld: timing not trusted (invalid_timing)" "$work/untrusted.txt" &&
    ! grep -q "invalid_timing (.*) speedup [0-9]" "$work/untrusted.txt" || { fail "untrusted sweep's progress line"; cat "$work/untrusted.txt"; }
"$pkbw" sweep --name untrusted2 --solutions-dir "$untrusted" --problems 1 --nproc 2 --backend host --mode perf --json -- \
    --dtype f32 --trials 1 --m 128 --n 128 --launches 1 --pairs 2 --iters 10 --no-pkb > "$work/untrusted.jsonl" 2>/dev/null
json_get 'e=[e for e in d if e["event"]=="pair_finished"][0]; assert e["speedup"] == "withheld: timing not trusted (invalid_timing)", e' \
    "$work/untrusted.jsonl" || fail "untrusted sweep's pair_finished"
# 6. Timing never shares a GPU: --runs-per-gpu with a perf sweep is refused (usage) before the store is touched.
"$pkbw" sweep --name shared --solutions-dir "$untrusted" --problems 1 --nproc 2 --backend host --mode perf \
    --runs-per-gpu 2 --store "$work/shared.db" > "$work/shared.txt" 2>&1
code=$?
[ "$code" = 2 ] && grep -q "timing never does" "$work/shared.txt" && [ ! -e "$work/shared.db" ] ||
    { fail "--runs-per-gpu with perf: exit $code"; cat "$work/shared.txt"; }
# ... and so is an eval sweep whose every run times (-- --perf).
"$pkbw" sweep --name shared --solutions-dir "$untrusted" --problems 1 --nproc 2 --backend host --mode eval \
    --runs-per-gpu 2 --store "$work/shared.db" -- --perf > "$work/shared.txt" 2>&1
code=$?
[ "$code" = 2 ] && grep -q "timing never does" "$work/shared.txt" && [ ! -e "$work/shared.db" ] ||
    { fail "--runs-per-gpu with -- --perf: exit $code"; cat "$work/shared.txt"; }
# 7. A SLURM submission that fails queues nothing: the sweep is left incomplete (to resume), not running.
"$pkbw" sweep --name refused --solutions-dir "$baseline" --problems 1 --nproc 2 --backend host --slurm \
    --sbatch /bin/false --store "$work/refused.db" > "$work/refused.txt" 2>&1
code=$?
[ "$code" = 3 ] && grep -q "nothing was submitted" "$work/refused.txt" ||
    { fail "failed sbatch: exit $code"; cat "$work/refused.txt"; }
"$pkbw" sweeps --json --store "$work/refused.db" | python3 -c "import json,sys; s=[json.loads(l) for l in sys.stdin]; assert s[0]['status'] == 'incomplete', s" ||
    fail "a failed submission's sweep is not incomplete"
echo "sweep_local: $failures failures"
exit $((failures > 0))
