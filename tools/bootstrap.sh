#!/usr/bin/env bash
# Installs pkbw's build dependencies (Debian 12, as root) and builds it into ./build.
# CUDA (nvcc, NCCL, CUPTI, NVTX) is taken from /usr/local/cuda when present; without it the CUDA
# backend is left out and everything else builds.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake ninja-build g++ pkg-config
          libsqlite3-dev nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev
          qt6-base-dev qt6-base-dev-tools qt6-svg-dev libqcustomplot-dev libgl-dev
          clang-14 clang-format-14 libclang-rt-14-dev xvfb xauth sqlite3 python3 python3-torch
          libtomlplusplus-dev libcurl4-openssl-dev libcpp-httplib-dev
          slurmctld slurmd slurm-client munge) # slurm + munge: the sweep_slurm test starts a one-node SLURM
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo ${PKBW_CMAKE_ARGS:-}
cmake --build build -j "$(nproc)"
