#!/usr/bin/env bash
# Starts W pkbw-rank processes by hand (as torchrun would), for bringing up the rank program without
# the pkbw launcher. Usage: launch_ranks.sh BIN_DIR CONFIG W [PORT]
set -euo pipefail
bin=$1; config=$2; world=$3; port=${4:-$((20000 + RANDOM % 20000))}
pids=()
for ((r = 0; r < world; r++)); do
    RANK=$r WORLD_SIZE=$world LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port PKBW_RDZV_TOKEN=smoke$port \
        NCCL_NVLS_ENABLE=0 timeout "${PKBW_SMOKE_TIMEOUT:-120}" "$bin/pkbw-rank" --config "$config" &
    pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=$?; done
exit $rc
