#!/usr/bin/env bash
# Builds build-dev here as tools/gpu/build_dev.sh does on a GPU machine (Release, no GUI, tests, benches or
# generate; the Qt-free dependencies from .deps) and strips its programs, so that a device call can carry
# build-dev/bin and build-dev/lib (carry: ["build-dev/bin", "build-dev/lib", ...]) and skip the build's
# minute of device time; build_dev.sh there runs `pkbw --version` and builds anew where it does not run.
# Build it from the commit the call runs (the device gets the working tree, not this build's sources).
# Prints the carried size (the device call carries at most 64 MiB in all). Usage: tools/gpu/carry_build.sh
set -eu
cd "$(dirname "$0")/../.."
deps=$PWD/.deps
[ -d "$deps/include" ] || { echo "carry_build.sh: .deps missing (tools/gpu/prepare.sh)" >&2; exit 1; }
cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DPKBW_BUILD_GUI=OFF -DPKBW_BUILD_TESTS=OFF \
    -DPKBW_BUILD_BENCH=OFF -DPKBW_BUILD_GENERATE=OFF -DCMAKE_PREFIX_PATH="$deps" \
    -DSQLite3_INCLUDE_DIR="$deps/include" -DSQLite3_LIBRARY="$deps/lib/libsqlite3.a" > /dev/null
cmake --build build-dev -j "$(nproc)"
strip --strip-unneeded build-dev/bin/* build-dev/lib/*.so 2>/dev/null || true
# The commit it was built from, printed by build_dev.sh where it is kept ("-dirty": uncommitted changes).
git describe --always --dirty > build-dev/bin/REVISION
du -sh build-dev/bin build-dev/lib
