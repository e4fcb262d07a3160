#!/usr/bin/env bash
# `pkbw agent` on PKB's Python cuda backend (--pkb-checkout), three scripted attempts at PKB problem 1,
# judged by pkbw on the GPU (docs/generate.md "The agent loop"). The model is tools/gpu/scripted_model.py,
# a loopback TEST DOUBLE serving three replies written here: a wrong candidate (adds 1), one that
# raises (an undefined name), a right one (an all-reduce through torch). No live provider is called.
# Usage: tools/gpu/agent_pkb.sh OUT_DIR
# Environment: PKB (the checkout, default .pkb), PKBW (a pkbw built with PKBW_BUILD_GENERATE=ON; default:
# build it in build-agent, which needs toml++ and libcurl's headers), JUDGE_BACKEND (cuda, or host for
# the CPU: CI runs this script so on the miniature checkout), PRECISION (bf16), W (world size, default
# 2 with two GPUs or more, else 1), JUDGE_ARGS (extra judge flags, each passed with --judge-arg; CI
# gives "--trials 1 --m 64 --n 64").
set -uo pipefail
source "$(dirname "$0")/budget.sh"
gpu_budget "$@" # runs under tools/gpu/budget.sh's budget (450 s)
out=$(realpath -m "${1:?usage: tools/gpu/agent_pkb.sh OUT_DIR}")
pkb=$(realpath -m "${PKB:-.pkb}")
cd "$(dirname "$0")/../.." || exit 1
mkdir -p "$out"
rm -f "$out/agent_pkb.txt"
export PATH=/usr/local/cuda/bin:$PATH NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
judge_backend=${JUDGE_BACKEND:-cuda}
precision=${PRECISION:-bf16}
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
W=${W:-$(( ${gpus:-0} >= 2 ? 2 : 1 ))}
line() { printf '%s\n' "$*" | tee -a "$out/agent_pkb.txt"; }
if [ ! -d "$pkb/reference" ] || [ ! -f "$pkb/kernelgen/prompts.toml" ]; then
    line "agent_pkb: skipped: $pkb is not a PKB checkout (reference/, kernelgen/prompts.toml)"
    exit 1
fi
# The Python pkbw's PKB judge runs (pkbw's own default: $PKBW_PYTHON, else python3 on PATH).
if ! "${PKBW_PYTHON:-python3}" -c "import torch, torch.distributed as d; assert d.is_available()" 2>/dev/null; then
    line "agent_pkb: skipped: ${PKBW_PYTHON:-python3} cannot import torch with torch.distributed (set PKBW_PYTHON)"
    exit 77
fi
p=${PKBW:-}
if [ -z "$p" ]; then
    deps=$PWD/.deps
    extra=()
    [ -d "$deps" ] && extra=(-DCMAKE_PREFIX_PATH="$deps" -DSQLite3_INCLUDE_DIR="$deps/include" -DSQLite3_LIBRARY="$deps/lib/libsqlite3.a")
    # libcurl's headers copied into .deps/include/curl, linked against the machine's own libcurl.so.4
    # (there is no libcurl.so link without the -dev package). toml++'s headers in .deps/include/toml++
    # are found by engine/generate/CMakeLists.txt (header-only) without help.
    if [ -f "$deps/include/curl/curl.h" ]; then
        curl_so=$(ldconfig -p 2>/dev/null | awk '/libcurl\.so\.4 .*x86-64/ {print $NF; exit}')
        [ -n "$curl_so" ] && extra+=(-DCURL_INCLUDE_DIR="$deps/include" -DCURL_LIBRARY="$curl_so" -DCURL_LIBRARY_RELEASE="$curl_so")
    fi
    line "libcurl: headers $( [ -f /usr/include/curl/curl.h ] || [ -f /usr/include/x86_64-linux-gnu/curl/curl.h ] && echo system || { [ -f "$deps/include/curl/curl.h" ] && echo .deps; } || echo none), library ${curl_so:-$(ldconfig -p 2>/dev/null | awk '/libcurl\.so\.4 / {print $NF; exit}')}; toml++ headers $( [ -f /usr/include/toml++/toml.h ] && echo system || { [ -f "$deps/include/toml++/toml.h" ] && echo .deps; } || echo none)"
    t0=$(date +%s)
    if ! { cmake -S . -B build-agent -G Ninja -DCMAKE_BUILD_TYPE=Release -DPKBW_BUILD_GUI=OFF -DPKBW_BUILD_TESTS=OFF \
        -DPKBW_BUILD_BENCH=OFF -DPKBW_BUILD_GENERATE=ON ${extra[@]+"${extra[@]}"} \
        && cmake --build build-agent -j "$(nproc)" --target pkbw pkbw-rank pkbw-candidate; } > "$out/build.log" 2>&1; then
        tail -30 "$out/build.log"
        line "agent_pkb: the build with PKBW_BUILD_GENERATE=ON failed (it needs toml++'s and libcurl's headers, in the system or in .deps/include, and libcurl.so.4: see build.log); set PKBW to a pkbw that has 'agent'"
        exit 1
    fi
    line "build: $(( $(date +%s) - t0 )) s"
    p=build-agent/bin/pkbw
fi
scratch=$(mktemp -d /tmp/pkbw-agent-pkb.XXXXXX)
trap 'kill "$server" 2>/dev/null; rm -rf "$scratch"' EXIT
export PKBW_STORE=$scratch/runs.db PKBW_CACHE_DIR=$scratch/cache

# The scripted replies (written for this check; the solutions take PKB problem 1's signature).
cat > "$scratch/reply_1.md" <<'PY'
Add one to the input.
```python
import torch


def solution(tensor: torch.Tensor) -> torch.Tensor:
    return tensor + 1
```
PY
cat > "$scratch/reply_2.md" <<'PY'
Call the fused kernel.
```python
import torch


def solution(tensor: torch.Tensor) -> torch.Tensor:
    return fused_allreduce_kernel(tensor)
```
PY
cat > "$scratch/reply_3.md" <<'PY'
Reduce a copy in place.
```python
import torch
import torch.distributed as dist


@torch.no_grad()
def solution(tensor: torch.Tensor) -> torch.Tensor:
    result = torch.empty_like(tensor).copy_(tensor)
    dist.all_reduce(result)
    return result
```
PY
mkdir -p "$out/requests"
python3 tools/gpu/scripted_model.py "$scratch/port" "$out/requests" "$scratch"/reply_{1,2,3}.md &
server=$!
# Up to 60 s for it to write its port (5 s was too short on a loaded host, where Python's start alone can
# take that), unless it died first.
for _ in $(seq 600); do
    [ -s "$scratch/port" ] && break
    kill -0 "$server" 2> /dev/null || break
    sleep 0.1
done
[ -s "$scratch/port" ] || { line "agent_pkb: the scripted model did not start"; exit 1; }

judge_args=()
for a in ${JUDGE_ARGS:-}; do judge_args+=("--judge-arg=$a"); done
t0=$(date +%s)
"$p" agent --model local/scripted-gpu-check --base-url "http://127.0.0.1:$(cat "$scratch/port")/v1" \
    --problem 1 --backend cuda --pkb-checkout "$pkb" --judge-backend "$judge_backend" --precision "$precision" \
    --nproc "$W" --attempts 3 --retries 0 --output-root "$scratch/generated" ${judge_args[@]+"${judge_args[@]}"} \
    > "$out/agent.txt" 2> "$out/agent.err"
rc=$?
line "agent: exit $rc in $(( $(date +%s) - t0 )) s (judge backend $judge_backend, W=$W, $precision)"
cat "$out/agent.txt" | tee -a "$out/agent_pkb.txt"
folder=$(cd "$scratch/generated" && ls -d solutions_* 2>/dev/null)
line "saved: $folder/$(ls "$scratch/generated/$folder" 2>/dev/null | tr '\n' ' ')"
# What the model was told after attempts 1 and 2 (the verdicts fed back), from the recorded requests.
python3 - "$out/requests" <<'PYCHECK' | tee -a "$out/agent_pkb.txt"
import json, sys
d = sys.argv[1]
for n in (2, 3):
    try:
        messages = json.load(open(f"{d}/request_{n}.json"))["messages"]
    except (OSError, ValueError, KeyError) as e:
        print(f"request {n}: none ({e})")
        continue
    print(f"--- feedback sent with request {n} ---")
    print(messages[-1]["content"][:1500])
PYCHECK
# The outcome the loop must reach: mismatch, crash, pass, in three attempts.
want="attempt 1: mismatch|attempt 2: crash|attempt 3: pass"
got=$(grep -o '^attempt [0-9]: [a-z_]*' "$out/agent.txt" | paste -sd'|')
if [ "$rc" = 0 ] && [ "$got" = "$want" ] && [ -f "$scratch/generated/$folder/1_"*"_cuda.py" ]; then
    line "agent_pkb: ok ($got)"
else
    line "agent_pkb: FAILED: exit $rc, attempts '$got' (want '$want'); see agent.err"
    tail -20 "$out/agent.err"
    exit 1
fi
