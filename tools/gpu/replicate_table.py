#!/usr/bin/env python3
"""The replication table of docs/perf.md ("Speedups that replicate") from independent `pkbw perf` runs.

Reads DIR/<pair>-<i>.jsonl (each the --json output of one whole `pkbw perf` command) and prints, per
pair: the candidate's and reference's per-call time (median over runs), the speedups, their spread
(max/min over the runs), how many runs' 95% intervals contain the median over the runs, and how many
runs gave the most common verdict. Usage: replicate_table.py DIR [--markdown]
"""
import collections
import glob
import json
import os
import statistics
import sys


def final_event(path):
    final = {}
    with open(path, errors="replace") as f:
        for text in f:
            try:
                event = json.loads(text)
            except ValueError:
                continue
            if isinstance(event, dict) and event.get("event") == "run_finished":
                final = event
    return final


def side_ms(perf, side):
    entry = (perf.get("sides") or {}).get(side) or {}
    value = entry.get("median_ms", entry.get("median"))
    return value if isinstance(value, (int, float)) else None


def main():
    folder = sys.argv[1]
    markdown = "--markdown" in sys.argv
    # --figure graph or launched: that figure (the graph's: each side's block replayed from a CUDA graph)
    # instead of the headline (perf.pkbw, which is one of the two: perf.headline says which).
    which = sys.argv[sys.argv.index("--figure") + 1] if "--figure" in sys.argv else "pkbw"
    runs = collections.defaultdict(list)
    for path in sorted(glob.glob(os.path.join(folder, "*.jsonl"))):
        pair, _, index = os.path.basename(path)[: -len(".jsonl")].rpartition("-")
        if not index.isdigit():
            continue
        final = final_event(path)
        perf = final.get("perf") or {}
        figure = perf.get(which) or {}
        if which in ("graph", "launched"):
            ref, cand = figure.get("reference_median_ms"), figure.get("candidate_median_ms")
        else:
            ref, cand = side_ms(perf, "reference"), side_ms(perf, "candidate")
        runs[pair].append({
            "status": final.get("status", "?"),
            "speedup": figure.get("speedup"),
            "low": figure.get("ci_low"),
            "high": figure.get("ci_high"),
            "verdict": figure.get("verdict", "?"),
            "ref": ref,
            "cand": cand,
            "pkb": (perf.get("pkb") or {}).get("speedup"),
            "wall": final.get("wall_s"),
        })
    header = ["pair", "runs", "cand us", "ref us", "speedups", "spread", "covered", "verdicts"]
    rows = []
    for pair, entries in sorted(runs.items(), key=lambda kv: (not kv[0][0].isdigit(), kv[0].zfill(8))):
        # Only a clean pass has a speedup that is a result (an invalid_timing run's figures are withheld).
        good = [e for e in entries
                if e["status"] == "pass" and isinstance(e["speedup"], (int, float)) and e["speedup"] > 0]
        if not good:
            rows.append([pair, str(len(entries)), "-", "-", "statuses " + ",".join(e["status"] for e in entries),
                         "-", "-", "-"])
            continue
        speedups = [e["speedup"] for e in good]
        median = statistics.median(speedups)
        covered = sum(1 for e in good if isinstance(e["low"], (int, float)) and e["low"] <= median <= e["high"])
        verdicts = collections.Counter(e["verdict"] for e in good)
        top, top_count = verdicts.most_common(1)[0]
        cand = statistics.median([e["cand"] for e in good if e["cand"]] or [0]) * 1000
        ref = statistics.median([e["ref"] for e in good if e["ref"]] or [0]) * 1000
        rows.append([pair, str(len(entries)), f"{cand:.1f}", f"{ref:.1f}",
                     " ".join(f"{s:.3f}" for s in speedups), f"{max(speedups) / min(speedups):.3f}",
                     f"{covered}/{len(good)}", f"{top} {top_count}/{len(good)}"
                     + ("" if len(verdicts) == 1 else " (" + ", ".join(f"{k} {v}" for k, v in verdicts.items() if k != top) + ")")])
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for row in rows:
            print("| " + " | ".join(row) + " |")
    else:
        for row in [header] + rows:
            print(" | ".join(row))


if __name__ == "__main__":
    main()
