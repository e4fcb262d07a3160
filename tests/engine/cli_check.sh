#!/usr/bin/env bash
# `pkbw check` (docs/cli.md): a candidate compiled and its own object's flags listed without a run, on
# a machine without a GPU: nothing recorded (no store, no runs folder), compile errors with their
# line, suspect flags from the candidate's own code, a file named for another problem refused, the
# --json line; the CUDA backend where nvcc is present (skipped with a reason where not).
# Args: PKBW SOURCE_ROOT
set -u
pkbw=$1
root=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PKBW_STORE=$work/store/runs.db PKBW_CACHE_DIR=$work/cache
samples=$root/samples/solutions_host_f32_none_samples_baseline
failures=0
fail() { echo "FAIL: $*"; sed 's/^/    /' "$work/out" "$work/err" | head -30; failures=$((failures + 1)); }
expect() { # expect CODE DESCRIPTION -- command...   (stdout in out, stderr in err)
    local want=$1 what=$2
    shift 3
    "$@" >"$work/out" 2>"$work/err"
    local got=$?
    if [ "$got" != "$want" ]; then fail "$what: exit $got, expected $want"; else echo "ok: $what (exit $got)"; fi
}
says() { grep -qF -- "$2" "$work/$1" || fail "$1 lacks '$2'"; }
field() { # field KEY: the check_finished line's KEY, as JSON
    python3 -c 'import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert len(lines) == 1 and lines[0]["event"] == "check_finished", lines
print(json.dumps(lines[0][sys.argv[2]]))' "$work/out" "$1" 2>&1
}

expect 0 "a host sample compiles with no flag" -- "$pkbw" check --problem 1 --solution "$samples/1_allreduce_host.cpp"
says out "Compile:  ok"
says out "Flags:    none"
[ ! -e "$work/store" ] || fail "check created $work/store: it records nothing"

expect 0 "--json: one check_finished line" -- "$pkbw" check --problem 1 --solution "$samples/1_allreduce_host.cpp" --json
[ "$(field status)" = '"compiled"' ] || fail "status $(field status)"
[ "$(field flags)" = '[]' ] || fail "flags $(field flags)"
[ "$(field problem)" = '"1_allreduce"' ] || fail "problem $(field problem)"

mkdir -p "$work/src"
cat > "$work/src/1_allreduce_host.cpp" <<'CPP'
#include "pkbw/solution.h"
#include <dlfcn.h>
extern "C" int pkbw_solution(const pkbw::Context&) {
    void* self = dlopen(nullptr, RTLD_NOW); // a candidate that loads code at run time
    return self ? 0 : 1;
}
CPP
expect 0 "a candidate's own dlopen is a suspect flag" -- "$pkbw" check --problem 1 --solution "$work/src/1_allreduce_host.cpp"
says out "suspect: loads code at run time (dlopen)"
expect 0 "--json carries it with its severity and reason" -- "$pkbw" check --problem 1 --solution "$work/src/1_allreduce_host.cpp" --json
python3 -c 'import json, sys
flags = json.loads(sys.argv[1])
assert [f["severity"] for f in flags] == ["suspect"] and "dlopen" in flags[0]["text"] and flags[0]["reason"], flags' \
    "$(field flags)" || fail "flags $(field flags)"

printf 'this is not C++\n' > "$work/src/broken_1_allreduce_host.cpp"
expect 1 "a compile error fails the check with its line" -- "$pkbw" check --problem 1 --solution "$work/src/broken_1_allreduce_host.cpp" --ignore-name
says err "compile candidate: FAILED: $work/src/broken_1_allreduce_host.cpp:1:"
expect 1 "--json: compile_error with diagnostics" -- "$pkbw" check --problem 1 --solution "$work/src/broken_1_allreduce_host.cpp" --ignore-name --json
[ "$(field status)" = '"compile_error"' ] || fail "status $(field status)"
python3 -c 'import json, sys; d = json.loads(sys.argv[1]); assert d and d[0]["line"] == 1, d' "$(field diagnostics)" ||
    fail "diagnostics $(field diagnostics)"

expect 2 "a file named for another problem is refused, naming both" -- "$pkbw" check --problem 2 --solution "$samples/1_allreduce_host.cpp"
says err "is named for problem 1_allreduce"
says err "not 2_allgather"
expect 2 "an unknown problem" -- "$pkbw" check --problem 999 --solution "$samples/1_allreduce_host.cpp"
expect 0 "a folder and a backend name, as eval takes them" -- "$pkbw" check --problem 2 --solution host --solutions-dir "$samples"
says out "2_allgather_host.cpp"

# PKB's Python solutions (--pkb-checkout; the miniature checkout): placed as a run places them, a
# multicast one refused, the source's flags listed; no torch or GPU needed.
pkb=$root/tests/engine/pkb_checkout
expect 0 "a PKB solution is placed and its source's flags listed" -- "$pkbw" check --pkb-checkout "$pkb" \
    --solutions-dir "$pkb/solutions_cuda_f32_none_samples_ci" --problem 1 --nproc 2
says out "Solution: $pkb/solutions_cuda_f32_none_samples_ci/1_allreduce_cuda.py"
says out "Compile:  not here: its torch extensions build when it runs"
expect 1 "a PKB solution using multicast is refused, naming the line" -- "$pkbw" check --pkb-checkout "$pkb" \
    --solution "$pkb/misbehaving/1_allreduce_multicast.py" --problem 1 --nproc 2 --ignore-name --json
[ "$(field status)" = '"refused"' ] || fail "status $(field status)"
python3 -c 'import json, sys; m = json.loads(sys.argv[1]); assert "multicast" in m and "1_allreduce_multicast.py:" in m, m' \
    "$(field message)" || fail "message $(field message)"

# A world size no shape of the problem runs at (49 at W = 1) is refused as a run refuses it.
cp -r "$pkb" "$work/pkb49"
printf 'def solution(*args):\n    return args[0]\n' > "$work/pkb49/reference/49_moe_ep_balanced.py"
printf 'def solution(*args):\n    return args[0]\n' > "$work/pkb49/49_moe_ep_balanced_cuda.py"
expect 2 "a PKB solution at a world size its problem cannot run at is refused" -- "$pkbw" check \
    --pkb-checkout "$work/pkb49" --solution "$work/pkb49/49_moe_ep_balanced_cuda.py" --problem 49 --nproc 1 --json
[ "$(field status)" = '"refused"' ] || fail "status $(field status)"
python3 -c 'import json, sys; m = json.loads(sys.argv[1]); assert "E = W (got W = 1)" in m and "cannot run at W = 1 either" in m, m' \
    "$(field message)" || fail "message $(field message)"

if [ -x /usr/local/cuda/bin/nvcc ] || command -v nvcc > /dev/null; then
    cuda=$root/samples/solutions_cuda_bf16_h200_2_samples_baseline
    expect 0 "a CUDA sample compiles here without a GPU" -- "$pkbw" check --problem 1 --solution "$cuda/1_allreduce_cuda.cu"
    says out "Backend:  cuda  arch: sm_90"
    says out "Flags:    none"
    expect 0 "a CUDA candidate calling the problem's own collective is suspect" -- \
        "$pkbw" check --problem 1 --solution "$root/tests/adversarial/cuda/nccl_allreduce.cu"
    says out "suspect: calls NCCL collective ncclAllReduce"
else
    echo "SKIP: the CUDA part: no nvcc on this machine"
fi
[ ! -e "$work/store" ] || fail "check created $work/store: it records nothing"
[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all checks passed"
