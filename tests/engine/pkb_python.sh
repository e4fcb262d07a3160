#!/usr/bin/env bash
# PKB's Python solutions through pkbw (`--pkb-checkout`, engine/python/pkbw_pkb_rank.py, the judge,
# and pkbw_pkb_candidate.py, the candidate's process), on the CPU with gloo, against the miniature
# checkout in tests/engine/pkb_checkout. Needs a Python with torch (Debian's python3-torch):
# $PKBW_PYTHON, else /usr/bin/python3; skips (77) with the reason when there is none.
# Args: PKBW SOURCE_ROOT
set -u
pkbw=$1
root=$2
python=${PKBW_PYTHON:-/usr/bin/python3}
if ! "$python" -c "import torch, torch.distributed as d; assert d.is_available()" 2>/dev/null; then
    echo "SKIP: $python cannot import torch with torch.distributed (install python3-torch)"
    exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PKBW_STORE=$work/runs.db PKBW_CACHE_DIR=$work/cache PKBW_PYTHON=$python
checkout=$root/tests/engine/pkb_checkout
solutions=$checkout/solutions_cuda_f32_none_samples_ci
failures=0
run() { # run WANT_EXIT DESCRIPTION -- pkbw args...
    local want=$1 what=$2 began=$SECONDS
    shift 3
    "$pkbw" "$@" --pkb-checkout "$checkout" --backend host --store "$PKBW_STORE" >"$work/out" 2>&1
    local got=$?
    if [ "$got" != "$want" ]; then
        echo "FAIL: $what: exit $got, expected $want"; sed 's/^/    /' "$work/out"; failures=$((failures + 1))
    else
        echo "ok: $what (exit $got, $((SECONDS - began)) s)"
    fi
}
contains() {
    if ! grep -q -- "$1" "$work/out"; then echo "FAIL: output lacks '$1'"; sed 's/^/    /' "$work/out"; failures=$((failures + 1)); fi
}
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# The hello events of the last --json run as "rank judge_pid candidate_pid" lines (with `workers`, the
# reference's timing worker's pid after them).
hellos() { "$python" -c "
import json, sys
for line in open(sys.argv[1]):
    if line.startswith('{') and '\"hello\"' in line:
        e = json.loads(line)
        if e.get('event') == 'hello':
            print(e['rank'], e['pid'], e.get('candidate_pid'), *([e.get('timing_worker_pid')] if sys.argv[2:] else []))" "$work/out" "$@"; }
# No judge, no candidate process and no reference timing worker of the last --json run is left.
no_leftovers() {
    local rank pid cpid wpid
    while read -r rank pid cpid wpid; do
        for p in $pid $cpid $wpid; do
            [ "$p" = None ] && continue
            if kill -0 "$p" 2>/dev/null && ! grep -q zombie "/proc/$p/status" 2>/dev/null; then
                fail "$1: process $p of rank $rank is still running"
            fi
        done
    done < <(hellos workers)
}
elapsed_below() { # elapsed_below START_SECONDS LIMIT WHAT
    local took
    took=$(( $(date +%s) - $1 ))
    [ "$took" -lt "$2" ] || fail "$3 took ${took} s (want < $2 s)"
}
sql() { "$python" -c "import sqlite3,sys; print('\n'.join('|'.join(map(str,r)) for r in sqlite3.connect(sys.argv[1]).execute(sys.argv[2])))" "$PKBW_STORE" "$1"; }

run 0 "problem 1 by number, 2 ranks, 3 trials" -- eval --problem 1 --solutions-dir "$solutions" --nproc 2 --trials 3
contains "all trials match"
contains "1_allreduce_cuda.py"
run 0 "problem 9 (tuple output with a torch.Size leaf), 3 ranks" -- eval --problem 9_scale_gather --solutions-dir "$solutions" --nproc 3 --m 16 --n 8
contains "all trials match"
# The run row: PKB's problem id and stem, the generation label from the folder, f32 from its name.
got=$(sql "SELECT problem_id, problem_stem, generation_label, dtype, status FROM runs ORDER BY id DESC LIMIT 1")
[ "$got" = "9|9_scale_gather|solutions_cuda_f32_none_samples_ci|f32|pass" ] || { echo "FAIL: run row '$got'"; failures=$((failures + 1)); }
# core's statistics filled in from the ranks' safetensors: three tensors per rank and trial.
got=$(sql "SELECT COUNT(*), SUM(pass) FROM tensor_results WHERE run_id = (SELECT MAX(id) FROM runs) AND trial = 0")
[ "$got" = "6|6" ] || { echo "FAIL: tensor results of trial 0 '$got' (want 6|6)"; failures=$((failures + 1)); }

run 1 "a candidate wrong on rank 1 only" -- eval --problem 1 --solution "$checkout/misbehaving/1_allreduce_wrong_on_rank1.py" --nproc 2 --dtype f32
contains "mismatch"
got=$(sql "SELECT rank, outcome FROM rank_results WHERE run_id = (SELECT MAX(id) FROM runs) ORDER BY rank")
[ "$got" = $'0|ok\n1|mismatch' ] || { echo "FAIL: rank results '$got'"; failures=$((failures + 1)); }
got=$(sql "SELECT mismatch_count, first_mismatch FROM tensor_results WHERE run_id = (SELECT MAX(id) FROM runs) AND rank = 1")
[ "$got" = "1|3" ] || { echo "FAIL: rank 1's statistics '$got' (want 1 mismatch at index 3)"; failures=$((failures + 1)); }

# A candidate's exception is reported by its judge as soon as the candidate's process answers, with
# the exception's text: well before the 60 s phase deadline, and with nobody left running.
start=$(date +%s)
run 1 "a candidate that raises on rank 1" -- eval --problem 1 --solution "$checkout/misbehaving/1_allreduce_raises_on_rank1.py" --nproc 2 --dtype f32 --timeout 60 --json
elapsed_below "$start" 30 "the raising candidate's run"
contains "the candidate raised on rank 1, trial 0"
contains "RuntimeError: rank 1 refuses"
contains '"status":"error"'
no_leftovers "raising candidate"
start=$(date +%s)
run 1 "a candidate whose process dies (SIGSEGV) on rank 1" -- eval --problem 1 --solution "$checkout/misbehaving/1_allreduce_segfaults_on_rank1.py" --nproc 2 --dtype f32 --timeout 60 --json
elapsed_below "$start" 30 "the crashing candidate's run"
contains "the candidate's process on rank 1 was killed by SIGSEGV (trial 0)"
contains '"status":"crash"'
no_leftovers "crashing candidate"

# The candidate's module runs in a process of its own: not the judge (the hello event's pid), a
# child of it, without pkbw's variables (the control pipe's number, the token) and without the
# reference's module.
probe=$work/probe
mkdir -p "$probe"
PKB_TEST_PROBE_DIR=$probe PKBW_SANDBOX_WRITABLE=$probe run 0 "the candidate runs in a process of its own" -- eval --problem 1 --solution "$checkout/probes/1_allreduce_reports_pid.py" --nproc 2 --dtype f32 --trials 1 --json
got=$(hellos | while read -r rank pid cpid; do "$python" -c "
import json, sys
rank, judge, candidate = sys.argv[2], int(sys.argv[3]), sys.argv[4]
seen = json.load(open(f'{sys.argv[1]}/rank_{rank}.json'))
problems = []
if seen['pid'] == judge: problems.append('runs in the judge')
if str(seen['pid']) != candidate: problems.append(f'pid {seen[\"pid\"]} is not the hello candidate_pid {candidate}')
if seen['ppid'] != judge: problems.append(f'parent {seen[\"ppid\"]} is not the judge {judge}')
if seen['environment']: problems.append(f'sees {seen[\"environment\"]}')
if 'pkbw_pkb_reference' in seen['modules']: problems.append('has the reference module')
print(f'rank {rank}: ' + ('; '.join(problems) or 'apart'))" "$probe" "$rank" "$pid" "$cpid"; done | sort)
[ "$got" = $'rank 0: apart\nrank 1: apart' ] || fail "the candidate's process: '$got'"
no_leftovers "probe"

# The judge is a child subreaper: a daemon the candidate leaves (double fork, setsid: out of the
# process group, past the death signal) comes back to it, is killed at the end and is reported.
PKB_TEST_PROBE_DIR=$probe PKBW_SANDBOX_WRITABLE=$probe run 0 "a candidate that leaves a daemon behind" -- eval --problem 1 --solution "$checkout/misbehaving/1_allreduce_leaves_daemon.py" --nproc 2 --dtype f32 --trials 2
contains "left 2 process(es) running after the run, killed: pid"
for f in "$probe"/daemon_rank_*.pid; do
    [ -f "$f" ] || { fail "the daemon did not start"; break; }
    if kill -0 "$(cat "$f")" 2>/dev/null; then fail "daemon $(cat "$f") is still running"; kill -9 "$(cat "$f")"; fi
done

# A candidate that writes forged rank_result "pass" lines and rank_done to fd $PKBW_CONTROL_FD (3)
# and every writable pipe among fds 3..20 that leads out of its process while computing a wrong
# answer: the control pipe is not among its descriptors, so the run is the real mismatch of trial 0
# and nothing forged is recorded (with the candidate in the rank process, the forged trials 1..9
# were reported as matches).
PKB_TEST_PROBE_DIR=$probe PKBW_SANDBOX_WRITABLE=$probe run 1 "a candidate forging events cannot change the verdict" -- eval --problem 1 --solution "$checkout/misbehaving/1_allreduce_forges_events.py" --nproc 2 --dtype f32 --trials 3 --json
contains "tensors not allclose"
if grep -q "forged" "$work/out"; then fail "a forged line reached the launcher"; fi
[ -f "$probe/forged_rank_0.json" ] && [ -f "$probe/forged_rank_1.json" ] || fail "the forging candidate did not run"
grep -q '"control_fd_variable": null' "$probe/forged_rank_0.json" || fail "PKBW_CONTROL_FD reached the candidate"
got=$(sql "SELECT trial, rank, outcome FROM rank_results WHERE run_id = (SELECT MAX(id) FROM runs) ORDER BY trial, rank")
[ "$got" = $'0|0|mismatch\n0|1|mismatch' ] || fail "rank results of the forging candidate '$got'"
got=$(sql "SELECT status FROM runs ORDER BY id DESC LIMIT 1")
[ "$got" = "mismatch" ] || fail "the forging candidate's run is '$got'"

# The workers run in pkbw-sandbox (docs/pkb-interop.md, "The sandbox"): a candidate that tries to write
# outside its own directory, read the store, plant a file among other solutions' torch extensions or
# write into the checkout is refused each time (it raises, naming what got through, otherwise), while
# its own HOME, TMPDIR and extensions folder stay writable; the candidate event names Landlock.
abi=$("$(dirname "$pkbw")/pkbw-sandbox" --describe -- | "$python" -c "import json,sys; print(json.load(sys.stdin)['landlock_abi'])")
if [ "${abi:-0}" -gt 0 ]; then
    mkdir -p "$work/outside" "$work/escape"
    cp "$checkout/misbehaving/1_allreduce_escapes_sandbox.py" "$work/escape/"
    PKB_TEST_OUTSIDE=$work/outside PKB_TEST_STORE=$PKBW_STORE run 0 "a candidate that tries to leave the sandbox" -- eval --problem 1 --solution "$work/escape/1_allreduce_escapes_sandbox.py" --nproc 2 --dtype f32 --trials 1 --json
    contains '"status":"pass"'
    [ -z "$(ls -A "$work/outside")" ] || fail "the candidate wrote outside its sandbox: $(ls "$work/outside")"
    ls "$work/escape"/escaped_rank_* >/dev/null 2>&1 && fail "the candidate wrote into its solution's folder"
    ls "$PKBW_CACHE_DIR"/torch_extensions/planted_rank_* >/dev/null 2>&1 && fail "the candidate planted a file among the extensions"
    got=$("$python" -c "
import json, sys
for line in open(sys.argv[1]):
    if line.startswith('{') and '\"candidate\"' in line:
        e = json.loads(line)
        if e.get('event') == 'candidate' and e.get('stage') == 'started':
            print(e['rank'], e['landlock_abi'] > 0, e['sandbox'].startswith('Landlock ABI'))" "$work/out" | sort | tr '\n' ' ')
    [ "$got" = "0 True True 1 True True " ] || fail "the candidate events do not name Landlock: '$got'"
    # Without the sandbox (PKBW_SANDBOX=off) the same candidate gets out: the check above can fail.
    PKBW_SANDBOX=off PKB_TEST_OUTSIDE=$work/outside PKB_TEST_STORE=$PKBW_STORE run 1 "the same candidate with PKBW_SANDBOX=off" -- eval --problem 1 --solution "$work/escape/1_allreduce_escapes_sandbox.py" --nproc 2 --dtype f32 --trials 1
    contains "escaped the sandbox: opened the launcher's descriptors, wrote $work/outside, read the store, planted an extension, wrote its own folder"
    contains "sandbox: no sandbox (PKBW_SANDBOX=off)"
else
    echo "skipped: the sandbox's refusals (this kernel has no Landlock)"
fi

# An output the candidate's process cannot describe to the judge (an arbitrary object) is that
# trial's invalid_output on every rank, named as PKB names outputs; the run stops there as at a mismatch.
run 1 "a candidate returning a value that cannot cross to the judge" -- eval --problem 1 --solution "$checkout/misbehaving/1_allreduce_returns_object.py" --nproc 2 --dtype f32 --trials 2
contains "output_1: a value of type object cannot cross"
got=$(sql "SELECT status FROM runs ORDER BY id DESC LIMIT 1")
[ "$got" = "invalid_output" ] || fail "the unsendable output's run is '$got'"
got=$(sql "SELECT trial, rank, outcome FROM rank_results WHERE run_id = (SELECT MAX(id) FROM runs) ORDER BY trial, rank")
[ "$got" = $'0|0|invalid_output\n0|1|invalid_output' ] || fail "rank results of the unsendable output '$got'"
# A dryrun of the reference has no candidate, so no candidate's process.
run 0 "a dryrun of the reference" -- dryrun --problem 1 --solution reference --nproc 2 --dtype f32 --json
[ "$(hellos | awk '{print $3}' | sort -u)" = None ] || fail "a reference dryrun started candidates: $(hellos)"

# The wrapper prefix ($PKBW_PKB_CANDIDATE_WRAPPER, shell words; the config's pkb.candidate_wrapper
# first): the candidate's process is started through it, keeping its pid when the wrapper execs.
printf '#!/bin/sh\n# logs its pid and argv, then becomes the candidate\necho "$$ $*" >> "$1"\nshift\nexec "$@"\n' >"$work/wrap.sh"
chmod +x "$work/wrap.sh"
PKBW_PKB_CANDIDATE_WRAPPER="$work/wrap.sh $work/wrapped.txt" run 0 "the candidate started through a wrapper prefix" -- eval --problem 1 --solutions-dir "$solutions" --nproc 2 --trials 1 --json
got=$(hellos | awk '{print $3}' | sort | tr '\n' ' ')
want=$(awk '{print $1}' "$work/wrapped.txt" 2>/dev/null | sort | tr '\n' ' ')
[ -n "$want" ] && [ "$got" = "$want" ] || fail "wrapped pids '$want' are not the candidates' '$got'"
[ "$(grep -c 'pkbw_pkb_candidate.py --channel-fd [0-9]' "$work/wrapped.txt")" = 2 ] || fail "wrapper argv: $(cat "$work/wrapped.txt")"
PKBW_PKB_CANDIDATE_WRAPPER="$work/no-such-wrapper --flag" run 3 "a wrapper that cannot be started" -- eval --problem 1 --solutions-dir "$solutions" --nproc 2 --trials 1
contains "cannot start the candidate's process"
contains "no-such-wrapper"
PKBW_PKB_CANDIDATE_WRAPPER=false run 3 "a wrapper that exits instead of starting the candidate" -- eval --problem 1 --solutions-dir "$solutions" --nproc 2 --trials 1
contains "exited with code 1 before it joined its process group (started through false; wrapper \[\"false\"\]: pkbw does not know what it enforces)"
PKBW_PKB_CANDIDATE_WRAPPER="'unbalanced" run 3 "a wrapper variable that is not shell words" -- eval --problem 1 --solutions-dir "$solutions" --nproc 2 --trials 1
contains 'PKBW_PKB_CANDIDATE_WRAPPER'
# pkb.candidate_wrapper in the config (the rank program run by hand: one rank, events to a file).
mkdir -p "$work/direct"
cat >"$work/direct/config.json" <<EOF_CONFIG
{"output_dir": "$work/direct", "mode": "eval", "m": 4, "n": 4, "atol": 0.01, "rtol": 0.01, "trials": 1,
 "pkb": {"checkout": "$checkout", "reference_file": "$checkout/reference/1_allreduce.py",
         "solution_file": "$solutions/1_allreduce_cuda.py", "problem_id": 1, "torch_dtype": "float32",
         "device": "cpu", "candidate_wrapper": "sh -c"}}
EOF_CONFIG
RANK=0 WORLD_SIZE=1 PKBW_CONTROL_FD= "$python" "$root/engine/python/pkbw_pkb_rank.py" --config "$work/direct/config.json"
got=$?
[ "$got" = 3 ] || fail "a config's bad pkb.candidate_wrapper: exit $got, expected 3"
grep -q 'config.json: pkb.candidate_wrapper must be a list of non-empty strings' "$work/direct/rank_0.events.jsonl" 2>/dev/null ||
    fail "no error naming pkb.candidate_wrapper: $(cat "$work/direct/rank_0.events.jsonl" 2>/dev/null)"

# On the host backend multicast cannot matter: the multicast user is not refused (it runs, and fails or
# passes by its own code); the refusal on CUDA is tested in engine.driver (test_safety.cpp).
NCCL_NVLS_ENABLE=0 "$pkbw" eval --problem 1 --solution "$checkout/misbehaving/1_allreduce_multicast.py" --nproc 2 \
    --dtype f32 --pkb-checkout "$checkout" --backend host --store "$PKBW_STORE" >"$work/out" 2>&1
got=$?
[ "$got" != 2 ] || fail "the multicast user was refused on the host backend (exit 2)"
if grep -q "uses NVLink multicast" "$work/out"; then fail "the multicast check ran on the host backend"; fi

# perf (docs/pkb-interop.md, "Timing"): the judge measures, the workers only compute. Per rank a second
# worker, the reference's (its pid in the hello event), runs the reference's timed calls as the
# candidate's process runs the candidate's; every timed call reads a fresh input set (a secret trial
# base, perturbed where PKB's inputs are constants) and writes an output slot of its own, checked after
# each ABBA pair; the candidate's tree is frozen outside its own calls. The honest run is 512x512 so
# that a block's calls outweigh the scheduling noise of a loaded 2-core host in the samples check (an
# allowance of 10% of the judge's time); the others are small and short.
# The last --json run's perf events as one line per rank (core/protocol.h, checked_timing.cpp's fields).
perf_summary() { "$python" - "$work/out" <<'PY'
import json, sys
ranks = {}
for line in open(sys.argv[1]):
    if not line.startswith('{'):
        continue
    e = json.loads(line)
    r = ranks.setdefault(e.get('rank'), {'plan': '-', 'blocks': [], 'checks': [], 'pkb': 0, 'hello': '-'})
    if e.get('event') == 'timing_plan':
        r['plan'] = 'checked' if e['checked'] and e['round_trip_trusted'] and e['round_trip_ms'] > 0 else 'unchecked'
        r['plan'] += f"/{e['calls_per_block']}x{e['pairs']}" + ('/perturbed' if e['inputs_info'] else '') + \
            ('/note' if e['inputs_note'] else '')
    elif e.get('event') == 'perf_result' and e.get('protocol') == 'pkbw':
        fields = all(k in e for k in ('call_samples_ms', 'span_ms', 'calls', 'judge_ms', 'round_trip_ms')) and \
            len(e['samples_ms']) == 1 and len(e['call_samples_ms']) == e['calls']
        frozen = e.get('frozen') is True and e.get('frozen_cpu_ms', 99) < 2.0
        r['blocks'].append(e['side'][0] + ('' if fields else '!') + ('f' if frozen else ''))
    elif e.get('event') == 'perf_result' and e.get('protocol') == 'pkb':
        r['pkb'] += 'span_ms' in e and e['calls'] == len(e['samples_ms'])
    elif e.get('event') == 'timed_check':
        r['checks'].append(f"{e['block']}:{e['status']}:{e['failed_calls']}/{e['calls']}")
    elif e.get('event') == 'hello':
        apart = e.get('timing_worker_pid') not in (None, e['pid'], e.get('candidate_pid'))
        r['hello'] = 'worker' if apart else 'no-worker'
for rank in sorted(k for k in ranks if isinstance(k, int)):
    r = ranks[rank]
    print(f"{rank} {r['hello']} {r['plan']} {','.join(r['blocks'])} {' '.join(r['checks'])} pkb={r['pkb']}")
PY
}
# The last --json run's warnings about timing (its run_finished message), one per line.
timing_warnings() { "$python" -c "
import json, sys
for line in open(sys.argv[1]):
    if line.startswith('{') and 'run_finished' in line:
        for part in json.loads(line)['message'].split('; warning: ')[1:]:
            if 'sandbox:' not in part:
                print(part)" "$work/out"; }
run 0 "perf of an honest candidate: both protocols, checked blocks" -- perf --problem 1 --solutions-dir "$solutions" --nproc 2 --m 512 --n 512 --trials 1 --pkb-warmup 5 --pkb-iters 10 --warmup 2 --pairs 2 --iters 10 --json
got=$(perf_summary)
want=$'0 worker checked/10x2/perturbed rf,c,c,rf 1:pass:0/10 2:pass:0/10 pkb=2\n1 worker checked/10x2/perturbed rf,c,c,rf 1:pass:0/10 2:pass:0/10 pkb=2'
[ "$got" = "$want" ] || fail "the honest candidate's perf events: '$got' (want '$want')"
[ -z "$(timing_warnings)" ] || fail "the honest candidate has timing warnings: $(timing_warnings)"
contains '"pkbw":{"band"'
contains '"launches":.{"ci_high"'
contains '"pkb":{"candidate_ms"'
got=$(sql "SELECT COUNT(DISTINCT side) FROM perf_samples WHERE run_id = (SELECT MAX(id) FROM runs)")
[ "$got" = 2 ] || fail "perf samples stored for $got side(s), want both"
# The perf phase's progress (docs/engine.md, perf_progress): each rank counts blocks 1..6 of 6 (PKB's
# series of both sides, then pkbw's 2 pairs of ABBA blocks), as pkbw-rank does.
got=$("$python" -c "
import json, sys
seen = {}
for line in open(sys.argv[1]):
    if line.startswith('{') and 'perf_progress' in line:
        e = json.loads(line)
        seen.setdefault(e['rank'], []).append((e['block'], e['blocks'], e['protocol'], e['side']))
print(' '.join(f\"{r}:{','.join(str(b) for b, _, _, _ in v)}/{v[-1][1]}:{v[0][2]}-{v[-1][2]}\" for r, v in sorted(seen.items())))
" "$work/out")
[ "$got" = "0:1,2,3,4,5,6/6:pkb-pkbw 1:1,2,3,4,5,6/6:pkb-pkbw" ] || fail "perf_progress per rank: '$got'"
if grep -q "sandbox:" "$work/out"; then
    # Where the kernel has Landlock the workers run in pkbw-sandbox and the run carries no sandbox warning.
    grep -q "no filesystem sandbox" "$work/out" || fail "a sandbox warning where Landlock exists: $(grep -o 'sandbox: [^;]*' "$work/out" | head -1)"
fi
no_leftovers "honest perf"
perf_args=(--nproc 2 --m 64 --n 64 --trials 1 --warmup 2 --pairs 2 --iters 5 --no-pkb --json)
# Its process's timer rewritten (1 us samples for 2 ms calls): the speedup is the judge's clock anyway.
run 0 "perf of a candidate that fakes its samples" -- perf --problem 1 --solution "$checkout/misbehaving/1_allreduce_fakes_timing.py" --dtype f32 "${perf_args[@]}"
contains "its per-call samples are not the block's"
if grep -q "timing not trusted" "$work/out"; then fail "a faked clock made the timing untrusted"; fi
# Work left to a thread after each call returns: the outputs copied at the return are not written yet.
run 1 "perf of a candidate that leaves its work to a thread" -- perf --problem 1 --solution "$checkout/misbehaving/1_allreduce_background_thread.py" --dtype f32 "${perf_args[@]}"
contains '"status":"invalid_timing"'
contains "a timed call's output failed its check"
# One call of three computed after the eval: the skipped calls' outputs are another set's.
run 1 "perf of a candidate that skips timed calls by counting" -- perf --problem 1 --solution "$checkout/misbehaving/1_allreduce_skips_by_count.py" --dtype f32 "${perf_args[@]}"
contains '"status":"invalid_timing"'
contains "a timed call's output failed its check in block 1 ([34] of 5 calls): call [01] of 5: output: tensors not allclose"
# Threads spinning while it is idle, to slow the reference: frozen, they use no CPU in its blocks.
run 0 "perf of a candidate that spins while the reference is timed" -- perf --problem 1 --solution "$checkout/misbehaving/1_allreduce_spins_while_idle.py" --dtype f32 "${perf_args[@]}"
got=$(perf_summary | cut -d' ' -f4)
[ "$got" = $'rf,c,c,rf\nrf,c,c,rf' ] || fail "the spinning candidate's blocks (every reference block frozen, under 2 ms of CPU): '$got'"
if grep -q "timing not trusted" "$work/out"; then fail "the spinning candidate's timing was not trusted"; fi
no_leftovers "spinning perf"
# A tuple output with a torch.Size leaf: tensor leaves in slots, the Size compared as a value.
run 0 "perf of problem 9 (tuple output, a value leaf, a float argument)" -- perf --problem 9_scale_gather --solutions-dir "$solutions" --nproc 2 --m 16 --n 8 --trials 2 --warmup 2 --pairs 2 --iters 5 --no-pkb --json
got=$(perf_summary | cut -d' ' -f3,5,6)
[ "$got" = $'checked/5x2 1:pass:0/5 2:pass:0/5\nchecked/5x2 1:pass:0/5 2:pass:0/5' ] || fail "problem 9's checked blocks: '$got'"
# Inputs whose shape changes between trials cannot be laid into slots: timed on inputs each worker
# draws, unchecked, and said so.
run 0 "perf of a problem whose shapes change between trials" -- perf --problem 10 --solutions-dir "$solutions" --nproc 2 --m 16 --n 8 --trials 2 --warmup 2 --pairs 2 --iters 5 --no-pkb --json
got=$(perf_summary | cut -d' ' -f3,5)
[ "$got" = $'unchecked/5x2/note \nunchecked/5x2/note ' ] || fail "problem 10's unchecked blocks: '$got'"
contains "warning: timing: the timed calls read inputs their workers drew and are not checked: its inputs' structure, shapes"

# --trace: each side profiles its iterations with torch's profiler (the reference in the judge, the
# candidate in its process, its trace sent back in a memfd); pkbw stores both as the run's trace,
# the sides end to end (core/kineto.h).
run 0 "eval --trace: both sides' torch-profiler traces stored" -- eval --problem 1 --solutions-dir "$solutions" --nproc 2 --m 64 --n 64 --trials 1 --trace=4
contains "events from 2 rank(s)"
traced=$(sql "SELECT MAX(id) FROM runs")
if "$pkbw" export "$traced" --store "$PKBW_STORE" --format chrome-trace -o "$work/trace.json" > /dev/null 2>&1; then
    got=$("$python" -c "
import json, sys
events = json.load(open(sys.argv[1]))
events = events['traceEvents'] if isinstance(events, dict) else events
ranks = {}
for e in events:
    if 'iteration' in str(e.get('cat')):
        ranks.setdefault(e['pid'], []).append(e['name'])
    if 'phase' in str(e.get('cat')):
        ranks.setdefault(('phase', e['pid']), {})[e['name']] = (e['ts'], e['ts'] + e['dur'])
out = []
for pid in sorted(k for k in ranks if not isinstance(k, tuple)):
    phase = ranks[('phase', pid)]
    order = 'after' if phase['candidate'][0] >= phase['reference'][1] else 'overlapping'
    out.append(f'{pid}:{len(ranks[pid])}:{order}')
print(' '.join(out))
" "$work/trace.json")
    [ "$got" = "0:8:after 1:8:after" ] || fail "traced iterations per rank (4 a side, candidate after reference): '$got'"
else
    fail "pkbw export of the traced run $traced failed"
fi

run 0 "a candidate whose process has no profiler on rank 1" -- eval --problem 1 --solution "$checkout/misbehaving/1_allreduce_breaks_the_profiler.py" --nproc 2 --dtype f32 --m 64 --n 64 --trials 1 --trace=3 --timeout 60
contains "events from 2 rank(s)"
run_dir=$(sql "SELECT run_dir FROM runs WHERE id = (SELECT MAX(id) FROM runs)")
[[ $run_dir == /* ]] || run_dir=$(dirname "$PKBW_STORE")/$run_dir # recorded relative to the store
grep -q "no candidate trace: torch's profiler cannot start" "$run_dir/rank_1.log" 2>/dev/null ||
    fail "rank 1's log does not say why its candidate trace is missing ($run_dir/rank_1.log)"
[ -s "$run_dir/trace/candidate/rank_0.candidate.torch.json" ] || fail "rank 0's candidate trace is missing"
[ ! -e "$run_dir/trace/candidate/rank_1.candidate.torch.json" ] || fail "rank 1 has a candidate trace"

run 1 "a candidate that raises in the traced pass" -- eval --problem 1 --solution "$checkout/misbehaving/1_allreduce_raises_when_traced.py" --nproc 2 --dtype f32 --m 64 --n 64 --trials 1 --trace=3 --timeout 60 --json
contains "the candidate raised on rank 1, the traced pass"
contains "rank 1 refuses to be traced"
no_leftovers "traced pass"

run 2 "unknown PKB problem" -- eval --problem 77 --solutions-dir "$solutions" --nproc 2
contains "no PKB problem 77"
run 2 "missing solution file" -- eval --problem 9 --solutions-dir "$checkout/misbehaving" --nproc 2
contains "9_scale_gather_cuda.py"

if [ "$failures" -ne 0 ]; then echo "$failures failure(s)"; exit 1; fi
echo "all PKB-solution checks passed"
