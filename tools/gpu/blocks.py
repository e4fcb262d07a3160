#!/usr/bin/env python3
"""Per-block figures of one `pkbw perf --json` output (docs/perf.md "The time"): for each launch and
block, the side, its own device time per call, the judge's per-call time, the SM clock and temperature
before the block and whether a slowdown was reported. Usage: blocks.py FILE.jsonl"""
import json
import sys

launch = -1
rows = []
for line in open(sys.argv[1], errors="replace"):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("event") == "timing_plan" and e.get("rank") == 0:
        launch = e.get("launch_index", launch + 1)
        print(f"launch {launch}: {e.get('pairs')} pairs x {e.get('calls_per_block')} calls, reference first "
              f"{e.get('reference_first')}, round trip {e.get('round_trip_ms', 0):.3f} (max "
              f"{e.get('round_trip_max_ms', 0):.3f}) ms")
    if e.get("event") == "perf_result" and e.get("protocol") in ("pkbw", "graph") and e.get("rank") == 0:
        device = (e.get("samples_ms") or [0])[0] * 1000
        overhead = e.get("judge_ms", 0) - device / 1000 * e.get("calls", 0)
        # Where the overhead lies (ms): the thaw, the request's round trip beyond the worker's own time of
        # it, the worker's time beyond its calls' host time, the host time beyond the device span, the rest
        # (the judges' barriers, the scan at the reply less its own time).
        thaw, request = e.get("thaw_ms", 0), e.get("request_ms", 0)
        worker, host, span = e.get("worker_ms", 0), e.get("host_ms", 0), e.get("span_ms", 0)
        parts = (f"thaw {thaw:.3f} ipc {request - worker:.3f} setup {worker - host:.3f} drain {host - span:.3f} "
                 f"rest {e.get('judge_ms', 0) - thaw - request:.3f}") if worker else ""
        print(f"  {e.get('block'):4} {e.get('protocol')[:2]} {e.get('side', '?')[:4]} device {device:8.2f} us  judge "
              f"{e.get('judge_call_ms', 0) * 1000:8.2f} us  overhead {overhead:6.3f} ms  {parts}  sm {e.get('sm_mhz', '-')} "
              f"MHz  {e.get('temperature_c', '-')} C  reasons {e.get('clock_reasons', '-')}"
              f"{'  THROTTLED' if e.get('throttled') else ''}")
    if e.get("event") == "run_finished":
        p = (e.get("perf") or {}).get("pkbw") or {}
        print(f"speedup {p.get('speedup', 0):.3f} [{p.get('ci_low', 0):.3f}, {p.get('ci_high', 0):.3f}] "
              f"{p.get('verdict')} launches {[round(x['speedup'], 3) for x in p.get('launches', [])]} "
              f"floored {p.get('floored_blocks')}/{p.get('candidate_blocks')} margin "
              f"{p.get('judge_margin_call_ms', 0) * 1000:.2f} us/call")
