#!/usr/bin/env python3
"""Each side's overhead per block (the judge's time less the worker's device span) in `pkbw perf --json`
runs (docs/perf.md "A steady request"): per run, launch and figure, the medians of the reference's and
the candidate's blocks, their difference (what the hold cannot tell from a clock that under-reports),
the spread of each side's overheads (median absolute deviation), and where the overhead lies (thaw, the
channel's round trip beyond the worker's own time, the worker's set-up, the device's drain, the rest).
Usage: overhead.py RUN.jsonl ...   (the plan's `placement` line is printed once per run)"""
import json
import statistics
import sys


def med(values):
    return statistics.median(values) if values else float("nan")


def mad(values):
    m = med(values)
    return med([abs(v - m) for v in values]) if values else float("nan")


for path in sys.argv[1:]:
    launch, placement = -1, ""
    blocks = {}  # (launch, protocol) -> side -> [(overhead, parts)]
    for line in open(path, errors="replace"):
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if e.get("event") == "timing_plan" and e.get("rank") == 0:
            launch = e.get("launch_index", launch + 1)
            placement = e.get("placement", placement)
        if e.get("event") == "perf_result" and e.get("protocol") in ("pkbw", "graph") and e.get("rank") == 0:
            judge, span = e.get("judge_ms", 0), e.get("span_ms", 0)
            thaw, request = e.get("thaw_ms", 0), e.get("request_ms", 0)
            worker, host = e.get("worker_ms", 0), e.get("host_ms", 0)
            parts = (thaw, request - worker, worker - host, host - span, judge - thaw - request)
            blocks.setdefault((launch, e["protocol"]), {}).setdefault(e.get("side", "?"), []).append(
                (judge - span, parts))
    print(f"{path}: {placement or 'placement not recorded'}")
    for (l, protocol), sides in sorted(blocks.items()):
        ref = [o for o, _ in sides.get("reference", [])]
        cand = [o for o, _ in sides.get("candidate", [])]
        names = ("thaw", "ipc", "setup", "drain", "rest")
        where = " ".join(
            f"{n} {med([p[i] for _, p in sides.get('reference', []) + sides.get('candidate', [])]):.3f}"
            for i, n in enumerate(names))
        print(f"  launch {l} {protocol:5} overhead ms: reference {med(ref):.3f} (mad {mad(ref):.3f}) "
              f"candidate {med(cand):.3f} (mad {mad(cand):.3f}) difference {med(cand) - med(ref):+.3f}; {where}")
