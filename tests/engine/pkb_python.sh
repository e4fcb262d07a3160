#!/usr/bin/env bash
# PKB's Python solutions through pkbw (`--pkb-checkout`, engine/python/pkbw_pkb_rank.py), on the
# CPU with gloo, against the miniature checkout in tests/engine/pkb_checkout. Needs a Python with
# torch (Debian's python3-torch): $PKBW_PYTHON, else /usr/bin/python3; skips (77) with the reason
# when there is none. Args: PKBW SOURCE_ROOT
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
    local want=$1 what=$2
    shift 3
    "$pkbw" "$@" --pkb-checkout "$checkout" --backend host --store "$PKBW_STORE" >"$work/out" 2>&1
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

run 1 "a candidate that raises on rank 1" -- eval --problem 1 --solution "$checkout/misbehaving/1_allreduce_raises_on_rank1.py" --nproc 2 --dtype f32 --timeout 20
contains "rank 1"
contains "rank 1 refuses"

NCCL_NVLS_ENABLE=0 run 1 "a multicast user is refused before launch" -- eval --problem 1 --solution "$checkout/misbehaving/1_allreduce_multicast.py" --nproc 2 --dtype f32
contains "uses NVLink multicast (multicast_ptr)"

run 0 "perf: both protocols, speedup and PKB's figure" -- perf --problem 1 --solutions-dir "$solutions" --nproc 2 --m 64 --n 64 --trials 1 --pkb-warmup 5 --pkb-iters 10 --warmup 3 --pairs 2 --iters 10
contains "speedup"
got=$(sql "SELECT COUNT(*) FROM perf_samples WHERE run_id = (SELECT MAX(id) FROM runs)")
[ "$got" -gt 0 ] 2>/dev/null || { echo "FAIL: no perf samples stored ('$got')"; failures=$((failures + 1)); }

run 2 "unknown PKB problem" -- eval --problem 77 --solutions-dir "$solutions" --nproc 2
contains "no PKB problem 77"
run 2 "missing solution file" -- eval --problem 9 --solutions-dir "$checkout/misbehaving" --nproc 2
contains "9_scale_gather_cuda.py"

if [ "$failures" -ne 0 ]; then echo "$failures failure(s)"; exit 1; fi
echo "all PKB-solution checks passed"
