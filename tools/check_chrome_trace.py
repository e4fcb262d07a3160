#!/usr/bin/env python3
"""Validate a Chrome Trace Event Format file written by `pkbw export --format chrome-trace`.

Checks what chrome://tracing and Perfetto rely on, plus pkbw's own layout (docs/tracing.md):
  - top level: an object with a "traceEvents" list (or a bare list);
  - every event: string "name" and "ph", integer "pid"; non-metadata events: integer "tid",
    numeric "ts" >= 0 (microseconds); "X" events: numeric "dur" >= 0;
  - only the phases pkbw writes: X, i (with scope "t"|"p"|"g"), M;
  - every pid has process_name metadata, every (pid, tid) with events has thread_name metadata;
  - per (pid, tid), complete events nest (no partial overlaps), within 1 ns of rounding;
  - optionally: the number of ranks (--expect-ranks) and a minimum count of events (--min-events).
Exit status 0 when valid, 1 with one line per problem (at most 50) otherwise, 2 on usage errors.
"""
import argparse
import json
import math
import sys
from collections import defaultdict

EPS_US = 1e-3  # 1 ns: ts and dur are ns / 1000 rounded to doubles


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def is_num(v):
    return (isinstance(v, (int, float)) and not isinstance(v, bool)) and math.isfinite(v)


def check(doc, expect_ranks=None, min_events=0):
    problems = []

    def bad(index, event, what):
        problems.append(f"traceEvents[{index}]: {what}: {json.dumps(event)[:200]}")

    if isinstance(doc, dict):
        events = doc.get("traceEvents")
        if not isinstance(events, list):
            return ['top level: "traceEvents" must be a list']
    elif isinstance(doc, list):
        events = doc
    else:
        return ["top level: expected an object or a list"]

    process_names, thread_names = set(), set()
    used_pids, used_threads = set(), set()
    slices = defaultdict(list)
    count = 0
    for i, e in enumerate(events):
        if not isinstance(e, dict):
            bad(i, e, "not an object")
            continue
        if not isinstance(e.get("name"), str):
            bad(i, e, 'missing string "name"')
        ph = e.get("ph")
        if not isinstance(ph, str):
            bad(i, e, 'missing string "ph"')
            continue
        if not is_int(e.get("pid")):
            bad(i, e, 'missing integer "pid"')
            continue
        pid = e["pid"]
        if ph == "M":
            args = e.get("args")
            if not isinstance(args, dict):
                bad(i, e, 'metadata without "args" object')
                continue
            if e.get("name") == "process_name":
                if not isinstance(args.get("name"), str):
                    bad(i, e, "process_name without args.name")
                process_names.add(pid)
            elif e.get("name") == "thread_name":
                if not is_int(e.get("tid")) or not isinstance(args.get("name"), str):
                    bad(i, e, "thread_name needs integer tid and args.name")
                else:
                    thread_names.add((pid, e["tid"]))
            continue
        if ph not in ("X", "i"):
            bad(i, e, f'unexpected phase "{ph}"')
            continue
        if not is_int(e.get("tid")):
            bad(i, e, 'missing integer "tid"')
            continue
        if not is_num(e.get("ts")) or e["ts"] < 0:
            bad(i, e, '"ts" must be a number >= 0 (microseconds)')
            continue
        if "args" in e and not isinstance(e["args"], dict):
            bad(i, e, '"args" must be an object')
        count += 1
        used_pids.add(pid)
        used_threads.add((pid, e["tid"]))
        if ph == "X":
            if not is_num(e.get("dur")) or e["dur"] < 0:
                bad(i, e, '"dur" must be a number >= 0 (microseconds)')
                continue
            slices[(pid, e["tid"])].append((e["ts"], e["ts"] + e["dur"], e.get("name")))
        elif e.get("s", "t") not in ("t", "p", "g"):
            bad(i, e, 'instant scope "s" must be t, p or g')

    for pid in sorted(used_pids - process_names):
        problems.append(f"pid {pid}: no process_name metadata")
    for key in sorted(used_threads - thread_names):
        problems.append(f"pid {key[0]} tid {key[1]}: no thread_name metadata")

    for (pid, tid), spans in sorted(slices.items()):
        spans.sort(key=lambda s: (s[0], -s[1]))
        open_ends = []
        for start, end, name in spans:
            while open_ends and open_ends[-1][0] <= start + EPS_US:
                open_ends.pop()
            if open_ends and open_ends[-1][0] < end - EPS_US:
                problems.append(
                    f"pid {pid} tid {tid}: '{name}' [{start}, {end}] partially overlaps "
                    f"'{open_ends[-1][1]}' ending at {open_ends[-1][0]}")
                continue
            open_ends.append((end, name))

    if expect_ranks is not None and len(process_names) != expect_ranks:
        problems.append(f"expected {expect_ranks} ranks (processes), found {len(process_names)}")
    if count < min_events:
        problems.append(f"expected at least {min_events} events, found {count}")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--expect-ranks", type=int)
    parser.add_argument("--min-events", type=int, default=0)
    args = parser.parse_args()
    try:
        with open(args.file, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as error:
        print(f"{args.file}: cannot read: {error}", file=sys.stderr)
        return 1
    problems = check(doc, args.expect_ranks, args.min_events)
    for p in problems[:50]:
        print(f"{args.file}: {p}", file=sys.stderr)
    if len(problems) > 50:
        print(f"{args.file}: ... and {len(problems) - 50} more", file=sys.stderr)
    if problems:
        return 1
    n = sum(1 for e in (doc["traceEvents"] if isinstance(doc, dict) else doc) if e.get("ph") != "M")
    print(f"{args.file}: ok ({n} events)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
