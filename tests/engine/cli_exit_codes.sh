#!/usr/bin/env bash
# The pkbw binary's exit codes and commands, as a user sees them (docs/cli.md). Args: PKBW SOURCE_ROOT
set -u
pkbw=$1
root=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PKBW_STORE=$work/runs.db PKBW_CACHE_DIR=$work/cache
failures=0
expect() { # expect CODE DESCRIPTION -- command...
    local want=$1 what=$2
    shift 3
    "$@" >"$work/out" 2>&1
    local got=$?
    if [ "$got" != "$want" ]; then
        echo "FAIL: $what: exit $got, expected $want"; sed 's/^/    /' "$work/out"; failures=$((failures + 1))
    else
        echo "ok: $what (exit $got)"
    fi
}
contains() {
    if ! grep -q -- "$1" "$work/out"; then echo "FAIL: output lacks '$1'"; sed 's/^/    /' "$work/out"; failures=$((failures + 1)); fi
}
samples=$root/samples/solutions_host_f32_none_samples_baseline

expect 0 "--version" -- "$pkbw" --version
contains "pkbw "
expect 0 "problems" -- "$pkbw" problems
contains "1_allreduce"
expect 2 "no subcommand flags" -- "$pkbw" eval --problem 1
expect 2 "unknown problem" -- "$pkbw" eval --problem 999 --solution host --nproc 2 --backend host
contains "unknown problem '999'"
expect 2 "missing solution lists the folder's closest files" -- "$pkbw" eval -p 2 -s cuda --solutions-dir "$samples" --nproc 2 --backend host
contains "2_allgather_cuda.cpp"
contains "2_allgather_host.cpp  (this problem, by name; --solution host runs it)"
contains "--place FILE=2"
expect 0 "README main job (host, 4 ranks)" -- "$pkbw" eval --problem 1_allreduce --solution host --solutions-dir "$samples" --nproc 4 --backend host
contains "all trials match"
printf '#include "pkbw/solution.h"\nint x = ;\n' > "$work/2_allgather_bad.cpp"
expect 1 "compile error" -- "$pkbw" eval -p 2 -s "$work/2_allgather_bad.cpp" --nproc 2 --dtype f32
contains "2_allgather_bad.cpp:2:"
expect 0 "runs" -- "$pkbw" runs
contains "compile_error"
contains "pass"
expect 0 "runs --status" -- "$pkbw" runs --status pass --json
contains '"status":"pass"'
expect 0 "show" -- "$pkbw" show 2
contains "trial 0:"
expect 2 "show of a missing run" -- "$pkbw" show 999
expect 0 "problems --json names folders and references" -- "$pkbw" problems --json
contains '"reference_host.cpp":'
expect 0 "export-bundle" -- "$pkbw" export-bundle 2 3 "$work/review.pkbw"
contains "2 run(s)"
expect 2 "export-bundle never overwrites" -- "$pkbw" export-bundle 2 "$work/review.pkbw"
contains "exists"
expect 2 "export-bundle of a missing run" -- "$pkbw" export-bundle 999 "$work/other.pkbw"
contains "no run 999"
expect 2 "export-bundle --sweep of a missing sweep" -- "$pkbw" export-bundle --sweep 1 "$work/other.pkbw"
contains "no sweep 1"
# Run ids above are fixed (show 2, export-bundle 2 3): runs below come after them.
expect 2 "a file named for another problem is refused" -- "$pkbw" eval -p 2 -s "$samples/1_allreduce_host.cpp" --nproc 2 --backend host --dtype f32
contains "1_allreduce_host.cpp is named for problem 1_allreduce (by its name), not 2_allgather"
contains "--ignore-name"
expect 1 "--ignore-name judges it as the problem asked for" -- "$pkbw" eval -p 2 -s "$samples/1_allreduce_host.cpp" --nproc 2 --backend host --dtype f32 --m 64 --n 64 --trials 1 --ignore-name
contains "2_allgather"
contains "mismatch"
exit $((failures > 0))
