"""Summarises a run directory's rank event files (rank_<r>.events.jsonl) as one line:
problem, candidate, exit code, wall time, per-trial status, pkbw and PKB speedups."""
import glob, json, statistics, sys

directory, stem, label, rc, wall = sys.argv[1:6]
statuses, perf, errors, hello = {}, {}, [], {}
for path in sorted(glob.glob(f"{directory}/rank_*.events.jsonl")):
    for line in open(path):
        e = json.loads(line)
        if e["event"] == "rank_result":
            statuses.setdefault(e["trial"], []).append(e["status"])
            if e["status"] != "pass":
                errors.append(f"r{e['rank']}t{e['trial']}: {e['message'][:160]}")
        elif e["event"] == "perf_result" and "samples_ms" in e:
            perf.setdefault((e["protocol"], e["side"], e["block"]), {})[e["rank"]] = e["samples_ms"]
        elif e["event"] == "error":
            errors.append(f"r{e.get('rank')}: {e['kind']}: {e['message'][:200]}")
        elif e["event"] == "hello":
            hello[e["rank"]] = e

def side_median(protocol, side):
    blocks = [v for (p, s, b), v in perf.items() if p == protocol and s == side]
    samples = []
    for ranks in blocks:
        n = min(len(x) for x in ranks.values())
        samples += [max(r[i] for r in ranks.values()) for i in range(n)]
    return statistics.median(samples) if samples else float("nan")

def pkb(side):
    ranks = perf.get(("pkb", side, 0), {})
    return max(statistics.mean(v) for v in ranks.values()) if ranks else float("nan")

trials = " ".join(f"t{t}:{'/'.join(sorted(set(s)))}" for t, s in sorted(statuses.items()))
ref, cand = side_median("pkbw", "reference"), side_median("pkbw", "candidate")
pref, pcand = pkb("reference"), pkb("candidate")
dev = hello.get(0, {})
print(f"{stem:18s} {label:45s} rc={rc} wall={float(wall):6.2f}s {trials} | pkbw ref {ref:.4f} cand {cand:.4f} ms "
      f"x{ref / cand if cand else float('nan'):.3f} | PKB ref {pref:.4f} cand {pcand:.4f} x{pref / pcand if pcand else float('nan'):.3f}"
      f" | {dev.get('device', '?')} nccl {dev.get('nccl_runtime')}/{dev.get('nccl_compiled')}")
for err in errors[:6]:
    print("    ", err)
