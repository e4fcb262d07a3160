#!/usr/bin/env bash
# The GPU checks of the engine, perf, problem-suite and tracing issues, in one batch for a lent GPU
# machine (docs/building.md "GPU checks"). Builds pkbw there (Qt-free), then prints tables.
# Usage: tools/gpu/checks.sh OUT_DIR [sections...]   sections: build eval suite perf trace crosscheck
#        (optional: oracle calibrate overhead adversarial pkbsol runlocal; oracle compares every CUDA
#        reference with its host oracle on the same inputs, bf16 and f32, through gpu_smoke; adversarial runs tools/gpu/adversarial.sh,
#        about 4 minutes; crosscheck/pkbsol/runlocal need .pkb: a PKB checkout with the cfbf870^ solution folders)
# Environment: W or NPROC (world size; default 2 when the machine has 2 GPUs or more, else 1: every
# section runs at W=1, those that need 2 ranks say so and are skipped), PKBW (the pkbw to run, default
# build-dev/bin/pkbw, which the build section makes), XC_PROBLEMS (crosscheck and suite problems,
# default 1..20), XC_CHECKOUT (the PKB checkout the crosscheck reads, default .pkb; pkbw numbers
# problems as PKB HEAD does, so from 33 on it needs a HEAD checkout), XC_DTYPES (default bf16,f32).
# Environment for pkbsol/runlocal: PKB_MODELS, PKB_PROBLEMS (what to run), PKBSOL_WARM_S (deadline of
# one warm-up eval, default 150), PKBSOL_JOBS (warm-ups at once, default 6), PKBSOL_FLAGS (extra perf
# flags), RUNLOCAL_MODEL, RUNLOCAL_PROBLEMS.
# Runs under tools/gpu/budget.sh's budget (PKBW_GPU_BUDGET_S, 450 s): sections run in the order given
# and the one the budget cuts says so; summary.txt gets each section's wall time as it ends. A device
# call carries `build` and one or two sections; give the others to the next call.
set -uo pipefail
source "$(dirname "$0")/budget.sh"
gpu_budget "$@"
all_sections="build eval suite oracle calibrate perf trace overhead crosscheck adversarial pkbsol runlocal"
if [ $# -lt 1 ]; then
    echo "usage: tools/gpu/checks.sh OUT_DIR [sections...]  (sections: $all_sections)" >&2
    exit 2
fi
# OUT_DIR as given by the caller, before the cd below.
out=$(realpath -m "$1")
shift
cd "$(dirname "$0")/../.." || exit 1
sections=${*:-build eval suite perf trace crosscheck}
for s in $sections; do
    if [[ " $all_sections " != *" $s "* ]]; then
        echo "checks.sh: unknown section '$s' (sections: $all_sections)" >&2
        exit 2
    fi
done
mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
# The store, run folders and caches live outside OUT_DIR (a device call returns few files); OUT_DIR
# gets summary.txt and the per-run JSON lines.
scratch=/tmp/pkbw-checks # warm-up stores and logs, torch extensions
export PKBW_STORE=${PKBW_STORE:-$scratch/runs.db} PKBW_CACHE_DIR=${PKBW_CACHE_DIR:-$scratch/cache}
mkdir -p "$scratch" "$(dirname "$PKBW_STORE")" "$PKBW_CACHE_DIR"

# Every setting any section reads is set here, before the first section: under `set -u` a variable
# first assigned further down stops every section above it.
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
gpus=${gpus:-0}
W=${W:-${NPROC:-$((gpus >= 2 ? 2 : 1))}}
if ! [[ $W =~ ^[1-9][0-9]*$ ]]; then
    echo "checks.sh: W (or NPROC) must be a positive integer, not '$W'" >&2
    exit 2
fi
p=${PKBW:-build-dev/bin/pkbw}
# The cross-check follows pkbw's problem numbering, which is PKB HEAD's: XC_CHECKOUT may name a HEAD
# checkout (.pkb holds the cfbf870^ tree for its solution folders, numbered one higher from 33 on).
xc_checkout=${XC_CHECKOUT:-.pkb}
xc_dtypes=${XC_DTYPES:-bf16,f32}
xc_problems=${XC_PROBLEMS:-$(seq 1 20)}
pkb_models=${PKB_MODELS:-"anthropic_claude-opus-4-7 google_gemini-3-pro-preview openai_gpt-5.5"}
pkb_problems=${PKB_PROBLEMS:-"1 2 3 4 5 6 7 8"}
runlocal_model=${RUNLOCAL_MODEL:-anthropic_claude-opus-4-7}
runlocal_problems=${RUNLOCAL_PROBLEMS:-"2 5"}
base=samples/solutions_cuda_bf16_h200_2_samples_baseline
tuned=samples/solutions_cuda_bf16_h200_2_samples_tuned

want() { [[ " $sections " == *" $1 "* ]]; }
line() { printf '%s\n' "$*" | tee -a "$out/summary.txt"; }
# A section that cannot run here says why in one line, in the summary too.
skip() { line "$1: skipped: $2"; }
# Where run_json writes a label's JSON lines.
log_of() { echo "$out/$(echo "$1" | tr ' /' '__').jsonl"; }
# A field of a pkbw --json log: run_dir (of run_started), or run_id, status or message (of
# run_finished); empty when the run never got that far (pkbw missing, a usage error).
field_of() {
    [ -f "$2" ] || return 0
    python3 - "$1" "$2" <<'PY'
import json, sys
field, path = sys.argv[1:3]
event = "run_started" if field == "run_dir" else "run_finished"
for text in open(path):
    try:
        e = json.loads(text)
    except ValueError:
        continue
    if e.get("event") == event and e.get(field):
        print(e[field])
PY
}

if [ "$gpus" -eq 0 ]; then
    line "note: no GPU found (nvidia-smi -L lists none): the cuda runs below will fail with pkbw's reason"
elif [ "$W" -gt "$gpus" ]; then
    line "note: W=$W but nvidia-smi lists $gpus GPU(s)"
fi

if want build; then
    gpu_section build "$out"
    deps=$PWD/.deps
    extra=()
    [ -d "$deps" ] && extra=(-DCMAKE_PREFIX_PATH="$deps" -DSQLite3_INCLUDE_DIR="$deps/include" -DSQLite3_LIBRARY="$deps/lib/libsqlite3.a")
    t0=$(date +%s)
    { cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DPKBW_BUILD_GUI=OFF -DPKBW_BUILD_TESTS=OFF \
        -DPKBW_BUILD_BENCH=OFF -DPKBW_BUILD_GENERATE=OFF ${extra[@]+"${extra[@]}"} &&
        timeout "$(gpu_limit 600)" cmake --build build-dev -j "$(nproc)"; } > "$out/build.log" 2>&1 \
        || { tail -40 "$out/build.log"; exit 1; }
    line "build: $(( $(date +%s) - t0 )) s; $("$p" --version | tr '\n' ' ')"
fi
if [ "$sections" != build ] && [ ! -x "$p" ]; then
    line "checks.sh: no pkbw at $p: run the build section first, or set PKBW"
    exit 1
fi

# Runs pkbw with --json on the cuda backend (so that a machine without a GPU gives pkbw's reason, not
# a host-backend search for .cpp files); prints "status exit speedup" from its final line.
# Args: label, pkbw command, its args...
run_json() {
    local label=$1 command=$2
    shift 2
    local log
    log=$(log_of "$label")
    timeout --foreground "$(gpu_limit 600)" "$p" "$command" "$@" --backend cuda --json > "$log" 2> "$log.err"
    local rc=$?
    python3 - "$log" "$rc" "$label" <<'PY' | tee -a "$out/summary.txt"
import json, sys
path, rc, label = sys.argv[1:4]
final, ranks_bad = {}, []
for line in open(path):
    try:
        e = json.loads(line)
    except Exception:
        continue
    if e.get("event") == "run_finished":
        final = e
    if e.get("event") == "rank_result" and e.get("status") != "pass":
        ranks_bad.append(f"r{e['rank']}t{e['trial']}:{e['status']}")
perf = final.get("perf") or {}
pk = perf.get("pkbw") or {}
pkb = perf.get("pkb") or {}
sides = perf.get("sides") or {}
text = f"{label:58s} {final.get('status','?'):14s} rc={rc}"
if pk:
    text += f" | x{pk['speedup']:.3f} [{pk['ci_low']:.3f},{pk['ci_high']:.3f}] {pk['verdict']}"
if isinstance(pkb, dict) and "speedup" in pkb:
    text += f" | PKB x{pkb['speedup']:.3f}"
for side in ("reference", "candidate", "bare_nccl"):
    if side in sides:
        s = sides[side]
        text += f" | {side[:4]} {s['median_ms']:.4f}ms"
        if "busbw_gbps" in s:
            text += f" {s['busbw_gbps']:.0f}GB/s"
        elif "algbw_gbps" in s:  # one rank: the busbw factor is 0
            text += f" algbw {s['algbw_gbps']:.0f}GB/s"
if ranks_bad:
    text += " | " + " ".join(ranks_bad[:6])
for warning in perf.get("warnings") or []:
    text += " | " + warning
if final.get("status") not in ("pass", None) and final.get("message"):
    # The head names the rank and phase; a Python rank's exception is at the tail.
    message = " ".join(final["message"].split())
    text += " | " + (message if len(message) <= 450 else message[:150] + " … " + message[-300:])
if not final:
    # pkbw ended before its last line (or never started): its stderr says why.
    err = " ".join(open(path + ".err", errors="replace").read().split())
    text += " | no run_finished" + (": " + err[-300:] if err else "")
print(text)
PY
}

if want eval; then
    gpu_section "eval (W=$W)" "$out"
    for prob in 1 2; do
        for dir in $base $tuned; do
            run_json "eval $prob $(basename "$dir")" eval --problem "$prob" --solution cuda --solutions-dir "$dir" --nproc "$W"
        done
    done
    if [ "$W" -ge 2 ]; then
        run_json "eval 1 wrong-on-rank-1" eval --problem 1 --solution tests/gpu/1_allreduce_wrong_on_rank1_cuda.cu --nproc "$W"
    else
        skip "eval 1 wrong-on-rank-1" "needs 2 GPUs (the candidate is wrong on rank 1 only)"
    fi
    times=""
    for i in 1 2 3; do
        t0=$(date +%s%N)
        "$p" eval --problem 2 --solution cuda --solutions-dir $tuned --nproc "$W" --backend cuda > /dev/null 2>&1
        times="$times $(( ($(date +%s%N) - t0) / 1000000 ))ms"
    done
    line "eval 2 (W=$W, 5 trials, warm compile cache) wall:$times"
fi

if want suite; then
    gpu_section "suite: every sample against its reference (W=$W, 5 trials)" "$out"
    # Warm the compile cache in parallel: dryruns of each side (W-only problems just fail fast).
    for f in problems/*/reference.cu "$base"/*.cu "$tuned"/*.cu; do
        stem=$(basename "$(dirname "$f")"); [[ $f == samples/* ]] && stem=$(basename "$f" _cuda.cu)
        sol=reference; [[ $f == samples/* ]] && sol=$f
        "$p" dryrun --problem "$stem" --solution "$sol" --nproc "$W" --backend cuda --store "$out/warm.db" > /dev/null 2>&1 &
        while [ "$(jobs -r | wc -l)" -ge 8 ]; do sleep 0.2; done
    done
    wait
    for n in $xc_problems; do
        stem=$(basename problems/"${n}"_*)
        found=0
        for dir in $base $tuned; do
            [ -f "$dir/${stem}_cuda.cu" ] || continue
            found=1
            run_json "perf $stem $(basename "$dir" | sed 's/solutions_cuda_bf16_h200_2_//')" perf --problem "$n" \
                --solution cuda --solutions-dir "$dir" --nproc "$W" --pairs 3 --iters 50 --pkb-warmup 100
        done
        [ $found = 1 ] || run_json "dryrun $stem reference" dryrun --problem "$n" --solution reference --nproc "$W"
    done
fi

if want oracle; then
    gpu_section "oracle: CUDA references against their host oracles (gpu_smoke, W=$W, 512x512, pkb inputs)" "$out"
    stems=$(for n in $xc_problems; do basename problems/"${n}"_*; done)
    for dt in bf16 f32; do
        # shellcheck disable=SC2086
        OUT_DIR=$scratch/gpu_smoke timeout "$(gpu_limit 600)" bash tests/problems/gpu_smoke/run_all.sh "$W" 512 512 $dt pkb $stems \
            > "$out/oracle_$dt.log" 2>&1
        grep -E "^RESULT|COMPILE FAIL|ref vs host  mismatches [1-9]" "$out/oracle_$dt.log" | sed "s/^/oracle $dt: /" \
            | tee -a "$out/summary.txt"
    done
fi

if want calibrate || want perf; then
    gpu_section "calibrate (W=$W)" "$out"
    [ "$W" -ge 2 ] || line "calibrate: at W=1 the collectives cross no link (busbw factor 0) and the peer copy is not measured"
    "$p" calibrate --nproc "$W" > "$out/calibrate.txt" 2>&1
    tee -a "$out/summary.txt" < "$out/calibrate.txt"
fi

if want perf; then
    gpu_section "perf (W=$W)" "$out"
    for i in 1 2 3 4 5; do
        run_json "perf 2 tuned repeat $i" perf --problem 2 --solution cuda --solutions-dir $tuned --nproc "$W"
    done
    run_json "perf 1 reference 256MiB + bare NCCL" perf --problem 1 --solution cuda --solutions-dir $tuned \
        --nproc "$W" --m 8192 --n 16384 --bare-nccl --trials 1 --pkb-warmup 20 --pkb-iters 20 --iters 20
    run_json "dryrun --perf 2 empty candidate (overhead)" dryrun --problem 2 \
        --solution tests/gpu/2_allgather_empty_cuda.cu --nproc "$W" --perf
fi

if want trace; then
    gpu_section "trace (W=$W)" "$out"
    run_json "perf 1 nvtx candidate, no tracer" perf --problem 1 --solution tests/gpu/1_allreduce_nvtx_cuda.cu --nproc "$W"
    label="perf 1 nvtx candidate, tracer loaded"
    run_json "$label" perf --problem 1 --solution tests/gpu/1_allreduce_nvtx_cuda.cu --nproc "$W" --trace
    run=$(field_of run_id "$(log_of "$label")")
    if [ "$(field_of status "$(log_of "$label")")" != pass ]; then
        line "trace: the traced run did not pass (the line above says why): nothing to export"
    else
        "$p" export "$run" --format chrome-trace --output "$out/trace_run$run.json" > "$out/export.log" 2>&1
        "$p" export "$run" --format csv --output "$out/kernels_run$run.csv" >> "$out/export.log" 2>&1
        python3 tools/check_chrome_trace.py "$out/trace_run$run.json" 2>&1 | tail -3 | tee -a "$out/summary.txt"
        python3 - "$out/trace_run$run.json" <<'PY' | tee -a "$out/summary.txt"
import json, sys, collections
try:
    t = json.load(open(sys.argv[1]))
except (OSError, ValueError) as error:
    print(f"trace: cannot read the export: {error}")
    sys.exit(0)
ev = t["traceEvents"] if isinstance(t, dict) else t
by = collections.defaultdict(collections.Counter)
for e in ev:
    if e.get("ph") != "X":
        continue
    n = e.get("name", "")
    kind = ("nccl_kernel" if n.startswith("ncclDevKernel") or n.startswith("ncclKernel") else
            "candidate_nvtx" if n == "candidate/allreduce" else
            "engine_phase" if "phase" in (e.get("cat") or "") else
            "engine_iteration" if "iteration" in (e.get("cat") or "") else
            "kernel_sum_peers" if "sum_peers" in n else None)
    if kind:
        by[e["pid"]][kind] += 1
for pid in sorted(by):
    print(f"trace rank {pid}: " + ", ".join(f"{k}={v}" for k, v in sorted(by[pid].items())))
PY
    fi
fi

if want overhead; then
    gpu_section "overhead: the same perf without and with the tracer loaded (kernel-only candidate, W=$W)" "$out"
    for i in 1 2; do
        run_json "perf 1 tuned, no tracer ($i)" perf --problem 1 --solution cuda --solutions-dir $tuned --nproc "$W"
        run_json "perf 1 tuned, tracer loaded ($i)" perf --problem 1 --solution cuda --solutions-dir $tuned --nproc "$W" --trace
    done
fi

pkb_missing="needs .pkb (a PKB checkout with the cfbf870^ solution folders) in $PWD"
if want crosscheck && [ ! -d "$xc_checkout" ]; then
    skip "crosscheck" "$pkb_missing"
elif want crosscheck; then
    gpu_section "crosscheck: torch reference vs pkbw's CUDA reference, same inputs, W=$W, 1024x1024" "$out"
    # tools/pkb_crosscheck.py table: pkbw dryrun of the reference with --keep-inputs/--keep-outputs,
    # then PKB's reference on NCCL per rank; torch start-up dominates, so four combinations at a time.
    PKBW_PYTHON=python3 timeout "$(gpu_limit 1500)" python3 tools/pkb_crosscheck.py table --backend cuda --pkbw "$p" \
        --pkb-checkout "$xc_checkout" --problems "$(echo $xc_problems | tr ' ' ',')" --worlds "$W" --dtypes "$xc_dtypes" \
        --m 1024 --n 1024 --jobs 4 --timeout 300 --json "$out/crosscheck.json" > "$out/crosscheck.md" 2>&1
    echo "crosscheck exit $?" >> "$out/crosscheck.md"
    grep -E '^\|' "$out/crosscheck.md" | tee -a "$out/summary.txt"
    tail -1 "$out/crosscheck.md" | tee -a "$out/summary.txt"
fi

# PKB's own cuda solutions (cfbf870^) for problems 1-8 through pkbw: perf = 5 eval trials, then PKB's
# protocol and pkbw's ABBA blocks. load_inline compiles on each solution's first call, so every
# solution is first run once (one trial, no timing) in parallel to fill the extension caches.
if want pkbsol && [ ! -d .pkb ]; then
    skip "pkbsol" "$pkb_missing"
elif want pkbsol; then
    gpu_section "pkbsol: PKB cuda solutions (W=$W)" "$out"
    t0=$(date +%s)
    if want runlocal; then # run_local.py's own extension cache fills meanwhile (CPU-bound nvcc)
        for n in $runlocal_problems; do
            (cd .pkb && TORCH_EXTENSIONS_DIR=$scratch/pkb_ext timeout 200 python3 run_local.py --mode dryrun \
                --problem "$n" --solution cuda --solutions-dir "$PWD/solutions_cuda_bf16_h100_8_$runlocal_model" \
                --nproc-per-node "$W" > "$out/rl_warm_$n.log" 2>&1; echo "run_local warm-up $n rc=$?" >> "$out/summary.txt") &
        done
    fi
    i=0
    # Each warm-up compiles a torch extension per rank (nvcc, minutes when many run at once): at most
    # PKBSOL_JOBS at a time, so that the first ones finish inside PKBSOL_WARM_S.
    jobs_max=${PKBSOL_JOBS:-6}
    for model in $pkb_models; do
        dir=.pkb/solutions_cuda_bf16_h100_8_$model
        for n in $pkb_problems; do
            i=$((i + 1))
            while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n; done
            (PKBW_STORE=$scratch/warm_$i.db timeout "${PKBSOL_WARM_S:-150}" "$p" eval --pkb-checkout .pkb --solutions-dir "$dir" \
                --problem "$n" --nproc "$W" --backend cuda --trials 1 --timeout-compile 140 > "$scratch/warm_$i.log" 2>&1
             rc=$?; [ $rc -ne 0 ] && echo "warm-up $n $model rc=$rc: $(grep -E 'refused|run [0-9]+:|pkbw:' "$scratch/warm_$i.log" | head -1 | cut -c1-160)" >> "$out/summary.txt") &
        done
    done
    wait
    line "warm-up (parallel first calls, JIT compile): $(( $(date +%s) - t0 )) s"
    for model in $pkb_models; do
        for n in $pkb_problems; do
            # shellcheck disable=SC2086 # PKBSOL_FLAGS is a list of flags
            run_json "pkb $n $model" perf --pkb-checkout .pkb --solutions-dir ".pkb/solutions_cuda_bf16_h100_8_$model" \
                --problem "$n" --nproc "$W" ${PKBSOL_FLAGS:-}
        done
    done
    line "pkbsol total: $(( $(date +%s) - t0 )) s"
fi

# Wall time of eval + timing of two problems: PKB's run_local.py (10 torchrun launches per problem)
# against one pkbw run per problem. Both warm: run_local's extension cache is filled by an untimed
# dryrun first, pkbw's by the pkbsol section or an untimed eval.
if want runlocal && [ ! -d .pkb ]; then
    skip "runlocal" "$pkb_missing"
elif want runlocal; then
    dir=$PWD/.pkb/solutions_cuda_bf16_h100_8_$runlocal_model
    gpu_section "runlocal: run_local.py vs pkbw, $runlocal_model, problems $runlocal_problems (W=$W, 5 trials, perf)" "$out"
    export TORCH_EXTENSIONS_DIR=$scratch/pkb_ext
    if ! want pkbsol; then
        for n in $runlocal_problems; do
            (cd .pkb && timeout 200 python3 run_local.py --mode dryrun --problem "$n" --solution cuda --solutions-dir "$dir" \
                --nproc-per-node "$W" > "$out/rl_warm_$n.log" 2>&1)
            "$p" eval --pkb-checkout .pkb --solutions-dir "$dir" --problem "$n" --nproc "$W" --backend cuda --trials 1 > /dev/null 2>&1
        done
    fi
    t0=$(date +%s.%N)
    for n in $runlocal_problems; do
        (cd .pkb && timeout 280 python3 run_local.py --mode eval --problem "$n" --solution cuda --solutions-dir "$dir" \
            --nproc-per-node "$W" --measure-perf --trials 5 > "$out/rl_eval_$n.log" 2>&1)
        line "run_local.py problem $n rc=$?: $(grep -E 'trial [0-9]+:' "$out/rl_eval_$n.log" | tr -s ' ' | tr '\n' ';' | cut -c1-300)"
    done
    t1=$(date +%s.%N)
    for n in $runlocal_problems; do
        run_json "pkbw perf $n $runlocal_model" perf --pkb-checkout .pkb --solutions-dir "$dir" --problem "$n" --nproc "$W"
    done
    t2=$(date +%s.%N)
    line "$(python3 -c "print(f'wall time: run_local.py {$t1-$t0:.1f} s, pkbw {$t2-$t1:.1f} s, ratio {($t1-$t0)/($t2-$t1):.1f}x')")"
fi

if want adversarial; then
    # Cases that need two ranks (a crash on rank 1, ranks that disagree) say so and are skipped at W=1
    # (needs_ranks in tests/adversarial/cuda/cases.json).
    gpu_section "adversarial candidates (tests/adversarial/cuda, W=$W): expected vs observed diagnosis" "$out"
    W=$W tools/gpu/adversarial.sh "$out/adversarial" "$p" 2>&1 | tail -30 | tee -a "$out/summary.txt"
fi
gpu_section_end
