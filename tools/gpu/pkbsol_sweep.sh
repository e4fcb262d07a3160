#!/usr/bin/env bash
# PKB's published solutions of one or more models through `pkbw sweep` on one GPU machine (docs/pkb-interop.md
# "PKB's published solutions on one H200"): an eval sweep of PROBLEMS with JOBS runs sharing each GPU
# (`--runs-per-gpu`: the solutions' torch extension builds, about 95 s each on the H200, overlap on its
# 16 cores), stopped with SIGINT before the budget ends (the sweep records what finished; a later call
# on the same machine resumes it by its name, a fresh machine starts over). Then one row per pair
# (status, seconds, cause as issue 27 sorts failures, flags by severity, message) from the pairs' logs, the
# status and cause counts, `pkbw show
# --sweep`, and one tarball of the store and the logs ($OUT_DIR/pkbsol.tgz: a device call returns few
# files). Builds nothing: build-dev/bin/pkbw (tools/gpu/build_dev.sh) or PKBW. Needs .pkb
# (tools/gpu/prepare.sh).
# Usage: tools/gpu/pkbsol_sweep.sh OUT_DIR   Environment: MODELS (anthropic_claude-opus-4-7; several,
#        space-separated, make one sweep of several generations, as the workbench compares them; MODEL
#        is read as MODELS),
#        PROBLEMS (1-87: a comma list or A-B), JOBS (10 runs per GPU), W (1), WORK (/tmp/pkbsol: the
#        store, kept on a warm machine so that the next call resumes), TRIALS (2).
set -uo pipefail
source "$(dirname "$0")/budget.sh"
gpu_budget "$@"
out=$(realpath -m "${1:?usage: tools/gpu/pkbsol_sweep.sh OUT_DIR}")
cd "$(dirname "$0")/../.." || exit 1
p=$(realpath -m "${PKBW:-build-dev/bin/pkbw}")
models=${MODELS:-${MODEL:-anthropic_claude-opus-4-7}} jobs=${JOBS:-10} W=${W:-1}
sols=() name=""
for model in $models; do
    sols+=("$PWD/.pkb/solutions_cuda_bf16_h100_8_$model")
    name=${name:+$name+}$model
done
work=${WORK:-/tmp/pkbsol}/$name
export PATH=/usr/local/cuda/bin:$PATH NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p "$out" "$work"
line() { printf '%s\n' "$*" | tee -a "$out/summary.txt"; }
# The problem a pair's log ran, and its solution file (its run_started event).
pair_field() { grep -m1 '"run_started"' "$1" | grep -o "\"$2\": *\"[^\"]*\"" | sed 's/.*"\([^"]*\)"$/\1/'; }
pair_problem() { pair_field "$1" problem; }
# The generation of a pair: its solution's folder, the model's part.
pair_model() { basename "$(dirname "$(pair_field "$1" solution)")" | sed 's/^solutions_cuda_bf16_h100_8_//'; }
[ -x "$p" ] || { line "pkbsol_sweep.sh: no pkbw at $p"; exit 2; }
for sol in "${sols[@]}"; do
    [ -d "$sol" ] || { line "pkbsol_sweep.sh: no $sol (tools/gpu/prepare.sh with its model)"; exit 2; }
done

# A later call on the same machine resumes the sweep by its name, with the problems and flags it was
# made with (PROBLEMS and TRIALS of that call are not read again).
gpu_section "sweep of $models (W=$W, problems ${PROBLEMS:-1-87}, $jobs runs per GPU)" "$out"
# SIGINT 60 s before the budget: the sweep stops starting pairs, its running children end, and what
# finished is recorded; the rows below still get their time. --foreground keeps it in the script's
# process group, so the budget's own end reaches it too; -k: SIGKILL 20 s after the SIGINT.
limit=$(($(gpu_left) - 60))
if [ "$limit" -lt 30 ]; then
    line "no time for the sweep ($(gpu_left) s left of the budget)"
else
    timeout --foreground -k 20 -s INT "$limit" "$p" sweep --name "pkbsol-$name" --pkb-checkout "$PWD/.pkb" \
        --solutions-dir "${sols[@]}" --problems "${PROBLEMS:-1-87}" --mode eval --nproc "$W" --backend cuda \
        --runs-per-gpu "$jobs" --store "$work/sweep.db" --json -- --trials "${TRIALS:-2}" --timeout-compile 170 \
        >> "$work/sweep.jsonl" 2>> "$work/sweep.err"
    line "sweep exit $?"
fi
gpu_section_end

# A pair that ran out of device memory beside nine others is judged again alone, while time is left
# (68's solution did, sharing the GPU; alone it passes PKB's run_local.py).
gpu_section "pairs out of memory, again alone" "$out"
grep -l -i "out of memory" "$work"/sweeps/*/logs/pair_*.jsonl 2>/dev/null | while IFS= read -r log; do
    [ -s "$log.alone" ] && continue # judged alone by an earlier call
    [ "$(gpu_left)" -lt 200 ] && { line "no time left to run $log alone (the next call on this machine will)"; break; }
    problem=$(pair_problem "$log") solution=$(pair_field "$log" solution)
    [ -n "$problem" ] && [ -f "$solution" ] || continue
    timeout --foreground -k 10 170 "$p" eval --pkb-checkout "$PWD/.pkb" --solution "$solution" --problem "$problem" --nproc "$W" \
        --backend cuda --trials "${TRIALS:-2}" --store "$work/sweep.db" --json > "$log.alone" 2>&1
    line "$(python3 tools/gpu/final_row.py "$log.alone" "$(pair_model "$log") $problem (alone)" - --cause --flags)"
done
gpu_section_end

gpu_section "rows" "$out"
: > "$out/rows.md"
for log in "$work"/sweeps/*/logs/pair_*.jsonl; do
    [ -s "$log" ] || continue
    stem=$(pair_problem "$log")
    python3 tools/gpu/final_row.py "$log" "$(pair_model "$log") ${stem:-$(basename "$log")}" "-" --cause --flags >> "$out/rows.md"
done
sort -t'|' -k2 -V "$out/rows.md" | tee -a "$out/summary.txt" > /dev/null
line "status counts: $(awk -F'|' '{gsub(/ /, "", $3); print $3}' "$out/rows.md" | sort | uniq -c | tr '\n' ' ')"
# Issue 27's classes (final_row.py --cause): "pkbw" must be none; "memory" pairs are judged alone above.
line "cause counts: $(awk -F'|' '{gsub(/ /, "", $5); print $5}' "$out/rows.md" | sort | uniq -c | tr '\n' ' ')"
sweep_id=$(python3 -c "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute('select max(id) from sweeps').fetchone()[0] or 1)" "$work/sweep.db" 2>/dev/null || echo 1)
"$p" show --sweep "$sweep_id" --store "$work/sweep.db" 2>&1 | head -40 >> "$out/summary.txt"
tar czf "$out/pkbsol.tgz" -C "$work" sweep.db sweep.jsonl sweep.err sweeps 2>/dev/null
gpu_section_end
