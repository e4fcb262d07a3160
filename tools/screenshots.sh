#!/bin/sh
# One screenshot per point of issue 19, under Xvfb, to BUILD/screenshots/ (docs/gui.md, "Screenshots",
# says what each shows):
#   tools/screenshots.sh [BUILD] [REAL_STORE_DIR]        (default build/)
# Part 1 (always): a host-backend store written here by the CLI (build/bin/pkbw): a sample eval, two
# traced perf runs of the host samples, a candidate with a bias ramp (all trials, outputs kept) and a
# candidate that does not compile, each in a generation folder of its own.
# Part 2 (when REAL_STORE_DIR, e.g. a store of H200 runs made by tools/gpu/gui_store.sh, is given): a
# copy of it at /tmp/pkbw-gui-store (the path its run folders were recorded with), PKB's logs imported
# into the copy with pkbw import-pkb, and the same points on real runs.
# Part 3 (always): a perf `pkbw sweep` of problems 1-4 x the host samples and a copy of them whose
# all-reduce sums with the wrong sign, on the Sweeps tab; and the scripted agent trajectory of
# tests/generate (wrong, does not compile, right; build/bin/make_gui_agent_store) beside the sources.
# Needs pkbw, pkbw-rank, pkbw-candidate, pkbw-gui and make_gui_agent_store built.
set -eu
build=${1:-build}
real=${2:-}
out="$build/screenshots"
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export XDG_CONFIG_HOME="$work/config"
pkbw="$build/bin/pkbw"
host_store="$work/host/runs.db"
samples=samples/solutions_host_f32_none_samples_baseline

gui() { # gui FILE ARGS...: one tab of one run to FILE
    file=$1
    shift
    xvfb-run -a -s "-screen 0 1600x1000x24" "$build/bin/pkbw-gui" --screenshot "$file" "$@" ||
        echo "screenshot $file failed" >&2
}
last_run() { sqlite3 "$1" "SELECT max(id) FROM runs WHERE $2" 2>/dev/null || echo 0; }
cli() { "$pkbw" "$@" --store "$host_store" > "$work/cli.log" 2>&1 || true; }

# --- Part 1: host-backend runs -------------------------------------------------------------------
common="--backend host --nproc 2 --dtype f32"
cli eval --problem 2_allgather --solution "$samples/2_allgather_host.cpp" $common --trials 2
cli perf --problem 2_allgather --solution "$samples/2_allgather_host.cpp" $common --trials 1 --trace \
    --no-pkb --pairs 2 --iters 20 --warmup 5
cli perf --problem 1_allreduce --solution "$samples/1_allreduce_host.cpp" $common --trials 1 --trace \
    --no-pkb --pairs 2 --iters 20 --warmup 5
wrong="$work/gens/solutions_host_f32_none_local_bias-ramp"
mkdir -p "$wrong"
# The sample all-reduce plus a ramp of 0.004 per column: every element off, by up to 0.252.
sed 's|dst\[i\] = sum;|dst[i] = sum + 0.004f * static_cast<float>(i % 64);|' "$samples/1_allreduce_host.cpp" \
    > "$wrong/1_allreduce_host.cpp"
cli eval --problem 1_allreduce --solution "$wrong/1_allreduce_host.cpp" $common --trials 3 --all-trials \
    --keep-outputs
broken="$work/gens/solutions_host_f32_none_local_broken"
mkdir -p "$broken"
sed -e 's|const pkbw::TensorView& out|const pkbw::TensorVeiw\& out|' -e 's|ctx.barrier();|ctx.barier();|' \
    "$samples/2_allgather_host.cpp" > "$broken/2_allgather_host.cpp"
cli eval --problem 2_allgather --solution "$broken/2_allgather_host.cpp" $common --trials 1

shots() { # shots PREFIX STORE TRACED_RUN MISMATCH_RUN SOURCES_RUN
    prefix=$1 store=$2
    gui "$out/${prefix}1_sources.png" --store "$store" --run "$5" --tab 4
    gui "$out/${prefix}2_trace.png" --store "$store" --run "$3" --tab 3
    gui "$out/${prefix}3_generations.png" --store "$store" --tab 5
    gui "$out/${prefix}4_heatmaps.png" --store "$store" --run "$4" --tab 1
    gui "$out/${prefix}5_runs.png" --store "$store" --tab 0
    gui "$out/${prefix}5_launcher.png" --store "$store" --tab 7
}
# The launcher as a run of the ramp candidate ends: per-rank bars with their verdicts.
mkdir -p "$XDG_CONFIG_HOME/pkbw"
cat > "$XDG_CONFIG_HOME/pkbw/pkbw-gui.conf" <<CONF
[launcher]
pkbw=$(cd "$(dirname "$pkbw")" && pwd)/pkbw
problem=1_allreduce
solution=$wrong/1_allreduce_host.cpp
mode=eval
ranks=2
dtype=f32
trials=3
atol=0.01
rtol=0.01
backend=host
all_trials=true
CONF
xvfb-run -a -s "-screen 0 1600x1000x24" "$build/bin/pkbw-gui" --store "$host_store" --launch \
    --screenshot "$out/host_5_launcher_run.png" || echo "launcher screenshot failed" >&2

# A PKB Python solution's traced perf on the host backend (torch's profiler in both processes; needs
# Debian's python3-torch): its own store, so that the shots above keep their runs.
pkb_store="$work/pkb/runs.db"
if /usr/bin/python3 -c "import torch" 2> /dev/null; then
    PKBW_PYTHON=/usr/bin/python3 "$pkbw" perf --pkb-checkout tests/engine/pkb_checkout \
        --solutions-dir tests/engine/pkb_checkout/solutions_cuda_f32_none_samples_ci --problem 1 --nproc 2 \
        --backend host --m 64 --n 64 --trials 1 --trace=5 --pkb-warmup 5 --pkb-iters 10 --warmup 3 --pairs 2 \
        --iters 10 --store "$pkb_store" > "$work/pkb.log" 2>&1 || cat "$work/pkb.log" >&2
    gui "$out/host_2_trace_pkb_solution.png" --store "$pkb_store" --run 1 --tab 3
else
    echo "no python3-torch: host_2_trace_pkb_solution.png not taken" >&2
fi

shots host_ "$host_store" "$(last_run "$host_store" "mode = 'perf'")" \
    "$(last_run "$host_store" "status = 'mismatch'")" "$(last_run "$host_store" "status = 'compile_error'")"

# --- Part 3: a sweep and an agent trajectory ----------------------------------------------------
sweep_store="$work/sweep/runs.db"
wrong_copy="$work/sweep/solutions_host_f32_none_samples_wrong-sign"
mkdir -p "$wrong_copy"
cp "$samples"/*.cpp "$wrong_copy/"
sed -i 's/+=/-=/' "$wrong_copy/1_allreduce_host.cpp"
"$pkbw" sweep --name samples-vs-wrong-sign --solutions-dir "$samples" --solutions-dir "$wrong_copy" \
    --problems 1-4 --mode perf --nproc 2 --backend host --jobs 1 --store "$sweep_store" -- --trials 1 \
    --no-pkb --pairs 3 --iters 20 --warmup 5 > "$work/sweep.log" 2>&1 || cat "$work/sweep.log" >&2
"$pkbw" show --sweep 1 --store "$sweep_store" > "$out/host_7_sweep.txt" 2>&1 || true
gui "$out/host_7_sweep.png" --store "$sweep_store" --tab 8
agent_dir="$work/agent"
if "$build/bin/make_gui_agent_store" "$agent_dir" "$(cd "$(dirname "$pkbw")" && pwd)/pkbw" \
    > "$out/host_8_agent.txt" 2>&1; then
    # Attempt 2 (did not compile), its diff against attempt 1, on the Sources tab.
    attempt2=$(sed -n 's/^attempt 2 run \([0-9]*\) .*/\1/p' "$out/host_8_agent.txt")
    gui "$out/host_8_agent_trajectory.png" --store "$agent_dir/runs.db" --run "$attempt2" --tab 4
    generated=$(sed -n 's/^generated run \([0-9]*\)/\1/p' "$out/host_8_agent.txt")
    gui "$out/host_8_generate_exchanges.png" --store "$agent_dir/runs.db" --run "$generated" --tab 4
else
    cat "$out/host_8_agent.txt" >&2
fi

# --- Part 2: the real store --------------------------------------------------------------------------
if [ -n "$real" ] && [ -f "$real/runs.db" ]; then
    copy=/tmp/pkbw-gui-store
    rm -rf "$copy"
    mkdir -p "$copy"
    cp -r "$real/." "$copy/"
    if [ -d "$copy/pkb_logs" ]; then
        "$pkbw" import-pkb "$copy/pkb_logs" --store "$copy/runs.db" > "$work/import.log" 2>&1 || cat "$work/import.log" >&2
    fi
    db="$copy/runs.db"
    pkb_solution=$(sqlite3 "$db" "SELECT min(id) FROM runs WHERE command_line LIKE '%--pkb-checkout%' AND mode = 'perf'")
    shots real_ "$db" "$(sqlite3 "$db" "SELECT min(id) FROM runs WHERE mode = 'perf' AND problem_stem <> 'calibrate'")" \
        "$(sqlite3 "$db" "SELECT min(id) FROM runs WHERE status = 'mismatch'")" "$pkb_solution"
    gui "$out/real_2_trace_pkb_solution.png" --store "$db" --run "$pkb_solution" --tab 3
    # The Perf tab of the tuned sample's traced perf: box plots and every sample in timing order.
    gui "$out/real_2_perf.png" --store "$db" --tab 2 --run \
        "$(sqlite3 "$db" "SELECT max(id) FROM runs WHERE mode = 'perf' AND solution_path LIKE '%tuned%'")"
    imported=$(sqlite3 "$db" "SELECT max(id) FROM runs WHERE command_line LIKE '%import-pkb%'")
    if [ -n "$imported" ]; then
        gui "$out/real_6_pkb_import_perf.png" --store "$db" --run "$imported" --tab 2
        gui "$out/real_6_pkb_import_run.png" --store "$db" --run "$imported" --tab 1
    fi
    # An imported run whose torch-profiler traces (run_local.py --profile) the import stored: its
    # Trace tab and its Run tab's heatmaps of the .pt outputs.
    traced_import=$(sqlite3 "$db" "SELECT max(r.id) FROM runs r JOIN trace_ranks t ON t.run_id = r.id
        WHERE r.command_line LIKE '%import-pkb%'" 2>/dev/null || true)
    if [ -n "$traced_import" ]; then
        gui "$out/real_6_pkb_import_trace.png" --store "$db" --run "$traced_import" --tab 3
        gui "$out/real_6_pkb_import_heatmaps.png" --store "$db" --run "$traced_import" --tab 1
    else
        echo "no imported PKB run holds a trace: real_6_pkb_import_trace.png not taken" >&2
    fi
fi
ls -1 "$out"/*.png
