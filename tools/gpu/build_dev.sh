#!/usr/bin/env bash
# Builds pkbw (no GUI, tests, benches or generate) into build-dev on a GPU machine, with the Qt-free
# dependencies carried in .deps (tools/gpu/prepare.sh), unless build-dev/bin/pkbw is already there (a
# warm machine keeps ignored build outputs between device calls). Prints one line: the build's seconds
# and the GPU, or the build log's tail on failure (exit 1). Usage: tools/gpu/build_dev.sh LOG_DIR
set -u
cd "$(dirname "$0")/../.." || exit 1
log=${1:?usage: tools/gpu/build_dev.sh LOG_DIR}/build.log
mkdir -p "$(dirname "$log")"
# A warm machine keeps build-dev; a fresh one may be given build-dev/bin and build-dev/lib carried from a
# Release build elsewhere (tools/gpu/carry_build.sh), which saves the build's minute if this machine's
# libraries run it: `pkbw --version` and every program's libraries found (ldd) decide; otherwise it is
# removed and built here. A carried build names the commit it was built from (bin/REVISION).
# REBUILD=1 (tools/gpu/carry_build.sh) builds whatever is there: the sources may have changed since.
if [ "${REBUILD:-0}" != 1 ] && [ -x build-dev/bin/pkbw ]; then
    if version=$(build-dev/bin/pkbw --version 2>&1) && ! ldd build-dev/bin/* 2>/dev/null | grep -q "not found"; then
        echo "build-dev kept (warm machine or carried): $(echo "$version" | head -1)$(cat build-dev/bin/REVISION 2>/dev/null | sed 's/^/, built from /')"
        exit 0
    fi
    echo "build-dev/bin/pkbw does not run here ($(echo "$version" | tail -1)): building"
    rm -rf build-dev
fi
t0=$(date +%s)
deps=$PWD/.deps
{ cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DPKBW_BUILD_GUI=OFF -DPKBW_BUILD_TESTS=OFF \
    -DPKBW_BUILD_BENCH=OFF -DPKBW_BUILD_GENERATE=OFF -DCMAKE_PREFIX_PATH="$deps" \
    -DSQLite3_INCLUDE_DIR="$deps/include" -DSQLite3_LIBRARY="$deps/lib/libsqlite3.a" &&
    cmake --build build-dev -j "$(nproc)"; } > "$log" 2>&1 || { tail -30 "$log"; exit 1; }
rm -f "$log"
echo "build $(($(date +%s) - t0)) s; $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader 2>/dev/null || echo "no GPU")"
