#!/usr/bin/env bash
# Prepares, on the development machine, what a GPU machine without Qt, SQLite headers or network needs
# beside the working tree (docs/building.md "On a GPU machine without Qt or SQLite headers"); each folder
# is ignored by git and travels only when a device call names it:
#   .deps/      sqlite3.h + libsqlite3.a, nlohmann-json's and CLI11's headers and CMake files (+ toml++,
#               curl headers where present), from this Debian machine's packages;
#   .pkb-head/  PKB HEAD's reference/ and utils/ (the cross-check), REVISION holding the commit;
#   .pkb/       a PKB checkout at HEAD (run_local.py, reference/, utils/, scripts/) with the published
#               solution folders of PKB's history (cfbf870^) of the MODELS asked for.
# Usage: tools/gpu/prepare.sh PKB_GIT_DIR [MODELS]   PKB_GIT_DIR: a clone or bare mirror of
#        togethercomputer/ParallelKernelBench; MODELS: space-separated folder suffixes (default
#        anthropic_claude-opus-4-7).
set -euo pipefail
git_dir=${1:?usage: tools/gpu/prepare.sh PKB_GIT_DIR [MODELS]}
models=${2:-anthropic_claude-opus-4-7}
cd "$(dirname "$0")/../.."
pkb() { git --git-dir="$git_dir" "$@"; }
[ -d "$git_dir/.git" ] && git_dir=$git_dir/.git
head=$(pkb rev-parse HEAD)

rm -rf .deps && mkdir -p .deps/include .deps/lib .deps/share/cmake
cp /usr/include/sqlite3.h /usr/include/sqlite3ext.h .deps/include/
cp "$(find /usr/lib -name libsqlite3.a | head -1)" .deps/lib/
cp -r /usr/include/nlohmann /usr/include/CLI .deps/include/
cp -r /usr/share/cmake/CLI11 /usr/share/cmake/nlohmann_json .deps/share/cmake/
[ -d /usr/include/toml++ ] && cp -r /usr/include/toml++ .deps/include/
for curl in /usr/include/x86_64-linux-gnu/curl /usr/include/curl; do
    [ -d "$curl" ] && { cp -r "$curl" .deps/include/; break; }
done

rm -rf .pkb-head && mkdir -p .pkb-head
pkb archive HEAD reference utils | tar -x -C .pkb-head
echo "$head" > .pkb-head/REVISION

rm -rf .pkb && mkdir -p .pkb
pkb archive HEAD run_local.py reference utils scripts pyproject.toml | tar -x -C .pkb
for model in $models; do
    pkb archive 'cfbf870^' "solutions_cuda_bf16_h100_8_$model" | tar -x -C .pkb
done
echo "$head" > .pkb/REVISION
du -sh .deps .pkb-head .pkb
echo "carry these in the device call: .deps .pkb-head .pkb"
