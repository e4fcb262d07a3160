#!/usr/bin/env bash
# Builds build-dev here as tools/gpu/build_dev.sh does on a GPU machine (Release, no GUI, tests, benches or
# generate; the Qt-free dependencies from .deps) and strips its programs, so that a device call can carry
# build-dev/bin and build-dev/lib (carry: ["build-dev/bin", "build-dev/lib", ...]) and skip the build's
# minute of device time; build_dev.sh there runs `pkbw --version` and builds anew where it does not run.
# Build it from the commit the call runs (the device gets the working tree, not this build's sources).
# Prints the carried size (the device call carries at most 64 MiB in all). Usage: tools/gpu/carry_build.sh
set -eu
cd "$(dirname "$0")/../.."
[ -d .deps/include ] || { echo "carry_build.sh: .deps missing (tools/gpu/prepare.sh)" >&2; exit 1; }
# The same configuration as on the GPU machine, from one place.
REBUILD=1 bash tools/gpu/build_dev.sh "${TMPDIR:-/tmp}/pkbw-carry-build"
[ -x build-dev/bin/pkbw ]
strip --strip-unneeded build-dev/bin/* build-dev/lib/*.so 2>/dev/null || true
# The commit it was built from, printed by build_dev.sh where it is kept ("-dirty": uncommitted changes).
git describe --always --dirty > build-dev/bin/REVISION
du -sh build-dev/bin build-dev/lib
