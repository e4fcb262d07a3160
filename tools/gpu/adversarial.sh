#!/usr/bin/env bash
# The CUDA adversarial cases (tests/adversarial/cuda/, expected diagnoses in cases.json) through
# `pkbw eval --backend cuda --nproc 2` on a GPU machine: one row per case with the expected and observed
# diagnosis, time to detect, leftovers (ranks alive, nvidia-smi compute apps, pgrep pkbw-rank), whether
# the next good run passes, PASS/FAIL. Every phase has a short deadline; the set ends in under 4 minutes
# (no case starts after 190 s: those print SKIP). Exit status 1 when a row FAILs.
# Usage: tools/gpu/adversarial.sh OUT_DIR [PKBW (default build-dev/bin/pkbw)] [--only case,case]
set -uo pipefail
source "$(dirname "$0")/budget.sh"
gpu_budget "$@" # runs under tools/gpu/budget.sh's budget (450 s)
cd "$(dirname "$0")/../.."
out=${1:?usage: tools/gpu/adversarial.sh OUT_DIR [PKBW] [--only case,case]}
pkbw=${2:-build-dev/bin/pkbw}
shift $(( $# >= 2 ? 2 : 1 ))
export PATH=/usr/local/cuda/bin:$PATH NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
mkdir -p "$out"
# A fresh cache: the cases share a header (adversarial_common.cuh) that the cache key does not cover.
rm -rf "$out/adversarial-cache" "$out"/adversarial.db* "$out"/warm.db*
exec timeout 300 python3 tests/adversarial/run_gpu_cases.py --pkbw "$pkbw" --out "$out" --nproc "${W:-2}" "$@"
