#!/usr/bin/env bash
# pkbw as a user and a program meet it (docs/cli.md "Errors", "Progress", "--json"): a mistyped command
# or option named with the closest real one; an unknown problem with the closest stems, said once; a PKB
# problem without a native port named as such; every error under --json also one JSON line on stdout;
# every command's --json JSON lines with an "event"; progress per trial and per timed block (lines,
# a redrawn line on a terminal, progress events under --json) and per retry of generate.
# Args: PKBW SOURCE_ROOT
set -u
pkbw=$1
root=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PKBW_STORE=$work/runs.db PKBW_CACHE_DIR=$work/cache
samples=$root/samples/solutions_host_f32_none_samples_baseline
failures=0
fail() { echo "FAIL: $*"; sed 's/^/    /' "$work/out" "$work/err" | head -40; failures=$((failures + 1)); }
expect() { # expect CODE DESCRIPTION -- command...   (stdout in out, stderr in err)
    local want=$1 what=$2
    shift 3
    "$@" >"$work/out" 2>"$work/err"
    local got=$?
    if [ "$got" != "$want" ]; then fail "$what: exit $got, expected $want"; else echo "ok: $what (exit $got)"; fi
}
says() { # says FILE TEXT: FILE (out or err) holds TEXT
    grep -qF -- "$2" "$work/$1" || fail "$1 lacks '$2'"
}
count_is() { # count_is FILE TEXT N: TEXT occurs on N lines of FILE (out or err)
    local n
    n=$(grep -cF -- "$2" "$work/$1")
    [ "$n" = "$3" ] || fail "'$2' on $n lines of $1, expected $3"
}
json_lines() { # every stdout line is one JSON object with an "event" (and there is at least one)
    python3 - "$work/out" "$1" <<'PY' || fail "$1: stdout is not JSON lines with an event"
import json, sys
lines = [l for l in open(sys.argv[1]).read().splitlines()]
assert lines, "no lines"
for line in lines:
    event = json.loads(line)
    assert isinstance(event, dict) and isinstance(event.get("event"), str), line[:200]
PY
}
last_event() { # python expression over `e`, the last JSON line
    python3 -c "import json; e=json.loads(open('$work/out').read().splitlines()[-1]); print($1)"
}
run_args=(--solution host --solutions-dir "$samples" --nproc 2 --backend host --m 64 --n 64)

# Typos: the mistyped word named, the closest real one offered, exit 2.
expect 2 "a mistyped option" -- "$pkbw" eval --problem 1 --nprocs 2 --solution host
says err "--nprocs: unknown option; did you mean --nproc?"
expect 2 "a mistyped option with a value" -- "$pkbw" eval --problem 1 --nproc 2 --solution-dir "$samples"
says err "--solution-dir: unknown option; did you mean --solutions-dir?"
expect 2 "a mistyped option after a valued one" -- "$pkbw" eval --problem 1 --nproc 2 --trails 3
says err "--trails: unknown option; did you mean --trials?"
expect 2 "a mistyped command" -- "$pkbw" evl --problem 1
says err "'evl' is not a pkbw command; did you mean eval?"
expect 2 "a mistyped store command" -- "$pkbw" store chek
says err "'chek' is not a pkbw store command; did you mean check?"
expect 2 "an option's value that looks like an option is not a typo" -- "$pkbw" agent --problem 1 --judge-arg --trials --model local/x --attemps 2
says err "--attemps: unknown option; did you mean --attempts?"
expect 2 "a negative number is a value" -- "$pkbw" eval --problem 1 --nproc -1 --solution host --backend host
says err "--nproc must be at least 1"

# Unknown problems: the closest stems, said once (not 60 names on stdout and stderr).
expect 2 "an unknown problem" -- "$pkbw" eval --problem 1_allreduc "${run_args[@]}"
says err "unknown problem '1_allreduc'; did you mean 1_allreduce"
count_is out "unknown problem" 0
count_is err "unknown problem" 1
count_is err "2_allgather" 0
# A PKB problem (1..87) this pkbw has no native port of, by number and by stem (problems get ported:
# the first one missing from `pkbw problems` is the one asked for).
unported=$(comm -13 <("$pkbw" problems | awk '{print $1}' | sort) <(seq 1 87 | sort) | sort -n | head -1)
if [ -n "$unported" ]; then
    expect 2 "PKB's problem $unported, not ported" -- "$pkbw" eval --problem "$unported" "${run_args[@]}"
    says err "a PKB problem pkbw does not implement natively"
    says err "run PKB's solutions with --pkb-checkout"
    stem=$(sed -n "s/.*PKB's problem \([0-9a-zA-Z_]*\), a PKB problem.*/\1/p" "$work/err")
    [ "${stem%%_*}" = "$unported" ] || fail "the message names PKB's stem of $unported: '$stem'"
    expect 2 "PKB's problem by stem, not ported" -- "$pkbw" eval --problem "$stem" "${run_args[@]}"
    says err "a PKB problem pkbw does not implement natively"
else
    echo "ok: every PKB problem is ported here (nothing to name as not native)"
fi
expect 2 "a number beyond PKB's" -- "$pkbw" eval --problem 200 "${run_args[@]}"
says err "pkbw problems lists the"
expect 2 "prompt: an unknown problem" -- "$pkbw" prompt --problem 1_allreduc --backend host
says err "did you mean 1_allreduce"

# Every error under --json is also one JSON line on stdout.
expect 2 "--json: a parse error of eval ends with run_finished" -- "$pkbw" eval --problem 1 --nprocs 2 --json
json_lines "eval parse error"
[ "$(last_event "e['event'], e['run_id'], e['exit_code']")" = "run_finished 0 2" ] || fail "eval parse error line"
expect 2 "--json: an unknown problem" -- "$pkbw" eval --problem 1_allreduc "${run_args[@]}" --json
json_lines "eval unknown problem"
[ "$(last_event "e['event'], e['exit_code'], 'did you mean 1_allreduce' in e['message']")" = "run_finished 2 True" ] ||
    fail "unknown problem line"
expect 2 "--json: a store error of runs" -- "$pkbw" runs --store "$work/missing.db" --json
json_lines "runs store error"
[ "$(last_event "e['event'], e['command'], e['exit_code'], 'no store at' in e['message']")" = "error runs 2 True" ] ||
    fail "runs error line"
expect 2 "--json: a parse error of show" -- "$pkbw" show --sweepz 1 --json
[ "$(last_event "e['event'], e['command'], 'did you mean --sweep' in e['message']")" = "error show True" ] ||
    fail "show parse error line"
mkdir -p "$work/ro" && : > "$work/ro/runs.db"
expect 3 "--json: a store that cannot be opened for a run" -- "$pkbw" eval --problem 1 "${run_args[@]}" --store "$work/ro" --json
json_lines "eval store error"
[ "$(last_event "e['event'], e['run_id'], e['exit_code']")" = "run_finished 0 3" ] || fail "eval store error line"
expect 2 "--json: generate's error" -- "$pkbw" generate --model local/x --problems 1 --json
[ "$(last_event "e['event'], e['command'], e['exit_code']")" = "error generate 2" ] || fail "generate error line"

# Progress: a line per trial on stderr (not a terminal), progress events under --json.
expect 0 "eval prints a line per trial" -- "$pkbw" eval --problem 1 "${run_args[@]}" --trials 3
says err "[trial 1/3] match"
says err "[trial 3/3] match"
expect 0 "eval --json: progress events" -- "$pkbw" eval --problem 1 "${run_args[@]}" --trials 3 --json
json_lines "eval --json"
python3 - "$work/out" <<'PY' || fail "eval --json progress events"
import json, sys
events = [json.loads(l) for l in open(sys.argv[1])]
trials = [e for e in events if e["event"] == "progress" and e["stage"] == "trial"]
assert [(e["trial"], e["trials"], e["done"], e["status"]) for e in trials] == [(t, 3, t + 1, "match") for t in range(3)], trials
assert events[-1]["event"] == "run_finished"
PY
[ ! -s "$work/err" ] || fail "eval --json wrote on stderr"
perf_args=(--no-pkb --pairs 2 --iters 5 --warmup 2 --launches 2 --trials 1)
expect 0 "perf prints a line per timed block and launch" -- "$pkbw" perf --problem 1 "${run_args[@]}" "${perf_args[@]}"
says err "[trial 1/1] match"
says err "[perf launch 1/2] block 1/4 timed: pkbw protocol"
says err "[perf launch 2/2] started"
says err "[perf launch 2/2] block 4/4 timed"
expect 0 "perf --json: a progress event per block" -- "$pkbw" perf --problem 1 "${run_args[@]}" "${perf_args[@]}" --json
json_lines "perf --json"
python3 - "$work/out" <<'PY' || fail "perf --json progress events"
import json, sys
events = [json.loads(l) for l in open(sys.argv[1])]
blocks = [(e["launch"], e["block"], e["blocks"]) for e in events if e["event"] == "progress" and e["stage"] == "perf_block"]
assert blocks == [(l, b, 4) for l in (1, 2) for b in range(1, 5)], blocks
assert [e["launch"] for e in events if e["event"] == "progress" and e["stage"] == "perf_launch"] == [2]
PY
expect 0 "dryrun prints its trial" -- "$pkbw" dryrun --problem 2 --solution reference --nproc 2 --backend host --m 64 --n 64
says err "[trial 1/1] ran"
# On a terminal: one redrawn line (carriage return, erase), the trial lines kept.
if script -qec true /dev/null >/dev/null 2>&1; then
    expect 0 "eval on a terminal" -- script -qec "$(printf '%q ' "$pkbw" eval --problem 1 "${run_args[@]}" --trials 2)" /dev/null
    grep -q $'\r\033\[K' "$work/out" || fail "no redrawn line on a terminal"
    says out "[trial 2/2] match"
fi

# generate: a line per retried try (nothing listens on port 9), an event under --json.
gen_args=(--model local/scripted --base-url http://127.0.0.1:9/v1 --problems 1 --backend host --retries 1 --backoff 0.05 --output-root "$work/gen")
expect 1 "generate prints each retry" -- "$pkbw" generate "${gen_args[@]}"
says err "1_allreduce: try 1 of 2 failed"
expect 1 "generate --json: retry progress, answer, finished" -- "$pkbw" generate "${gen_args[@]}" --json
json_lines "generate --json"
[ "$(python3 -c "import json; print(' '.join(json.loads(l)['event'] + (':' + json.loads(l).get('stage', '') if json.loads(l)['event'] == 'progress' else '') for l in open('$work/out')))")" \
    = "generation_started progress:retry answer generation_finished" ] || fail "generate --json events"

expect 1 "generate: a host name that does not resolve is not retried" -- "$pkbw" generate --model local/scripted --base-url http://pkbw-no-such-host.invalid/v1 --problems 1 --backend host --retries 3 --backoff 0.05 --output-root "$work/gen"
count_is err "retrying" 0
says out "(after 1 tries)"

# One shape for every command's --json: JSON lines, each with an event.
expect 0 "problems --json" -- "$pkbw" problems --json
json_lines "problems"
[ "$(python3 -c "import json; print(len([1 for l in open('$work/out') if json.loads(l)['event'] == 'problem']))")" \
    = "$("$pkbw" problems | wc -l)" ] || fail "problems --json: one line per problem"
expect 0 "runs --json" -- "$pkbw" runs --json
json_lines "runs"
[ "$(last_event "e['event']")" = "run" ] || fail "runs --json event"
expect 0 "show --json" -- "$pkbw" show 1 --json
json_lines "show"
[ "$(wc -l <"$work/out")" = 1 ] || fail "show --json is one line"
expect 0 "sweeps --json" -- "$pkbw" sweeps --json
expect 0 "store check --json" -- "$pkbw" store check --json
json_lines "store check"
[ "$(last_event "e['event'], e['ok']")" = "store_check True" ] || fail "store check --json"
expect 0 "sweep --plan --json" -- "$pkbw" sweep --plan --json --solutions-dir "$samples" --problems 1-2 --nproc 2 --backend host
json_lines "sweep --plan"
for command in problems runs show eval perf dryrun calibrate sweep sweeps "store check" "store merge" generate agent import-pkb; do
    # shellcheck disable=SC2086
    "$pkbw" $command --help >"$work/out" 2>"$work/err"
    grep -qE -- "--json +[A-Za-z]" "$work/out" || fail "$command --help: --json has no help text"
done

# Smaller points of the walk-through (docs/cli.md).
expect 0 "problems: the category column in line" -- "$pkbw" problems
[ "$(awk '{ print index($0, " " $3 " ") }' "$work/out" | sort -u | wc -l)" = 1 ] || fail "problems: columns out of line"
says out "15_combined_sharded_gemms "
expect 0 "dryrun's trial ran, not matched" -- "$pkbw" dryrun --problem 2 --solution reference --nproc 2 --backend host --m 64 --n 64
says out "trial 0: ran"
expect 2 "a world size out of range names the problem once" -- "$pkbw" eval --problem 1 --solution host --solutions-dir "$samples" --backend host --nproc 65
says err "1_allreduce: world size 65"
count_is err "1_allreduce: 1_allreduce" 0
expect 1 "export of a run without traces names --trace" -- "$pkbw" export 1 --format chrome-trace -o "$work/t.json"
says err "--trace"
expect 0 "export-bundle says the bundle's own size" -- "$pkbw" export-bundle 1 "$work/b.pkbw"
says out "the bundle is $(stat -c %s "$work/b.pkbw") bytes"
expect 0 "a sweep of one pair" -- "$pkbw" sweep --solutions-dir "$samples" --problems 1 --nproc 2 --backend host -- --m 64 --n 64 --trials 1
expect 0 "a perf sweep's pair line has its speedup" -- "$pkbw" sweep --mode perf --solutions-dir "$samples" --problems 1 --nproc 2 --backend host -- --m 64 --n 64 --trials 1 --no-pkb --pairs 2 --iters 5 --warmup 2 --launches 2
grep -qE "1_allreduce: pass \([0-9]+s\) speedup [0-9.]+x \[" "$work/out" || fail "perf sweep line without its speedup"
expect 0 "sweeps: 1 generation" -- "$pkbw" sweeps
says out " 1 generation "
count_is out " 2 generations " 0
mkdir -p "$work/py" && printf 'x = 1\n' > "$work/py/1_allreduce_cuda.py"
expect 0 "sweep --plan: PKB's Python files need --pkb-checkout" -- "$pkbw" sweep --plan --solutions-dir "$work/py" --nproc 2 --backend host
says out "PKB's Python solutions need --pkb-checkout"
says out "0 pairs planned; 1 file not placed (--place FILE=PROBLEM places one by hand)"
exit $((failures > 0))
