# Sourced by the scripts of tools/gpu/ (not run on its own): one device call of the lent machine lasts
# at most 10 minutes and a script cut short there returns only what it already wrote. Each script
#
#   source "$(dirname "$0")/budget.sh"; gpu_budget "$@"     # first line after `set`: re-runs itself
#                                                           # under the budget (PKBW_GPU_BUDGET_S, 450 s)
#   gpu_section NAME OUT_DIR                                # starts a section (closes the one before)
#   gpu_section_end                                         # prints "section NAME: N s" into OUT_DIR
#   gpu_left                                                # seconds left of the budget (0 when spent)
#
# gpu_budget re-executes the script under `timeout`, which leads a process group of its own and sends
# SIGTERM to the whole group when the budget is spent (SIGKILL 15 s later): nothing the script started
# outlives it. The trap then writes which section was cut, so the summary says what did not finish.
# A script started by another one (checks.sh's adversarial section) runs under the caller's budget.

gpu_budget() {
    if [ -z "${PKBW_GPU_BUDGET_END:-}" ]; then
        local budget=${PKBW_GPU_BUDGET_S:-450}
        export PKBW_GPU_BUDGET_END=$(($(date +%s) + budget))
        exec timeout -k 15 "$budget" bash "$0" "$@"
    fi
    trap 'gpu_budget_spent' TERM
}

gpu_left() {
    local left=$((PKBW_GPU_BUDGET_END - $(date +%s)))
    echo $((left > 0 ? left : 0))
}

# The smaller of a section's own limit and what is left of the budget less a margin for the tables.
gpu_limit() {
    local want=$1 left
    left=$(($(gpu_left) - 10))
    left=$((left > 1 ? left : 1))
    echo $((want < left ? want : left))
}

gpu_section() {
    gpu_section_end
    GPU_SECTION=$1
    GPU_SECTION_OUT=$2
    GPU_SECTION_T0=$(date +%s)
    mkdir -p "$GPU_SECTION_OUT"
    printf '== %s (%d s left of the budget)\n' "$GPU_SECTION" "$(gpu_left)" | tee -a "$GPU_SECTION_OUT/summary.txt"
}

gpu_section_end() {
    [ -n "${GPU_SECTION:-}" ] || return 0
    printf 'section %s: %d s\n' "$GPU_SECTION" $(($(date +%s) - GPU_SECTION_T0)) |
        tee -a "$GPU_SECTION_OUT/summary.txt" "$GPU_SECTION_OUT/section_times.txt"
    GPU_SECTION=
}

gpu_budget_spent() {
    local where=${GPU_SECTION:-between sections}
    if [ -n "${GPU_SECTION_OUT:-}" ]; then
        printf 'budget of %s s spent during section %s: stopped there (what ran is above)\n' \
            "${PKBW_GPU_BUDGET_S:-450}" "$where" | tee -a "$GPU_SECTION_OUT/summary.txt"
    fi
    exit 124
}
