#!/usr/bin/env bash
# Which traced kernels the tracer marks as touching peer memory (docs/tracing.md, "Kernels that touch
# peer memory"), at W >= 2 GPUs: the baseline samples that push or pull through pkbw's symmetric
# memory (1 all-reduce, 12 all-gather + GEMM, 13 GEMM + all-reduce) with --trace, then per run the
# candidate's kernels with "peer_memory": true and those without, and the reference's (NCCL's kernels,
# never given a peer pointer by pkbw). Expected: the sample's peer kernels (sum_peers, ...) marked,
# its local kernels and every reference kernel not. At W = 1 there is no peer: nothing is marked.
# Usage: tools/gpu/peer_memory.sh OUT_DIR [PKBW]   (W default 2; PROBLEMS default "1 12 13")
set -uo pipefail
source "$(dirname "$0")/budget.sh"
gpu_budget "$@"
out=$(realpath -m "${1:?usage: tools/gpu/peer_memory.sh OUT_DIR [PKBW]}")
pkbw=$(realpath "${2:-build-dev/bin/pkbw}")
cd "$(dirname "$0")/../.." || exit 1
W=${W:-2}
problems=${PROBLEMS:-"1 12 13"}
baseline=samples/solutions_cuda_bf16_h200_2_samples_baseline
export PATH=/usr/local/cuda/bin:$PATH NCCL_NVLS_ENABLE=0
mkdir -p "$out"
table=$out/peer_memory.md
printf '| problem | W | status | candidate kernels marked | candidate kernels not marked | reference kernels marked |\n|---|---|---|---|---|---|\n' > "$table"
gpu_section peer_memory "$out"
for p in $problems; do
    [ "$(gpu_left)" -gt 60 ] || { echo "budget spent before problem $p" >> "$table"; break; }
    "$pkbw" eval --problem "$p" --solution cuda --solutions-dir "$baseline" --backend cuda --nproc "$W" \
        --trials 1 --trace=4 --store "$out/peer.db" --json > "$out/$p.jsonl" 2> "$out/$p.err"
    python3 - "$out/$p.jsonl" "$p" "$W" >> "$table" <<'PY'
import collections, glob, json, os, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
final = next((e for e in lines if e.get("event") == "run_finished"), {})
run_dir = next((e.get("run_dir", "") for e in lines if e.get("event") == "run_started"), "")
def kernels(folder):
    marked, unmarked = collections.Counter(), collections.Counter()
    for path in glob.glob(os.path.join(run_dir, folder, "rank_*.cupti.jsonl")):
        for text in open(path):
            e = json.loads(text)
            if e.get("kind") == "kernel":
                name = (e.get("demangled") or e["name"]).split("(")[0][-40:]
                (marked if e.get("peer_memory") else unmarked)[name] += 1
    return marked, unmarked
cand_marked, cand_unmarked = kernels("trace/candidate")
ref_marked, _ = kernels("trace")
fmt = lambda c: ", ".join(f"{k} x{v}" for k, v in c.most_common(4)) or "-"
print(f"| {sys.argv[2]} | {sys.argv[3]} | {final.get('status', 'no result')} | {fmt(cand_marked)} | "
      f"{fmt(cand_unmarked)} | {fmt(ref_marked)} |")
PY
done
gpu_section_end
cat "$table"
