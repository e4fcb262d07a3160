#!/usr/bin/env python3
"""One markdown row from a `pkbw ... --json` log: | LABEL | status | SECONDS | message |.

Usage: final_row.py LOG LABEL SECONDS [--flags] [--cause]. The status and message are those of the log's
run_finished event ("no run_finished" when pkbw ended before it: its last line is shown instead); --flags
adds a column before the message counting the run's flags by severity ("info 2, suspect 1"; "-" when
none); --cause one with the class of a failure as issue 27's table sorts them (from the run's error events'
kind and phase and its message: pass, mismatch, multicast, world (the problem cannot run at this W: refused
before launch), reference (PKB's reference failed at this W),
pkbw (an internal or environment error: pkbw's to explain), memory (out of device memory: judge it alone),
solution (the candidate raised, crashed or hung), or "?")."""
import json
import sys


def cause(final, errors):
    status, message = final.get("status", ""), str(final.get("message", ""))
    kinds = {(e.get("kind"), e.get("phase")) for e in errors}
    if status == "pass":
        return "pass"
    if status in ("mismatch", "invalid_output"):
        return "mismatch"
    if message.startswith("refused:") and "multicast" in message:
        return "multicast"
    if message.startswith("refused:") and "cannot run at W =" in message:
        return "world"
    if any(phase == "reference" for _, phase in kinds):
        return "reference"
    if "out of memory" in message or any("out of memory" in str(e.get("message", "")) for e in errors):
        return "memory"
    if any(kind in ("internal", "environment", "rendezvous") for kind, _ in kinds) or status == "error" and not kinds:
        return "pkbw"
    if status in ("crash", "timeout", "error", "compile_error"):
        return "solution"
    return "?"


def main():
    path, label, seconds = sys.argv[1:4]
    with_flags = "--flags" in sys.argv[4:]
    with_cause = "--cause" in sys.argv[4:]
    final, last, errors = {}, "", []
    with open(path, errors="replace") as log:
        for text in log:
            last = text.strip() or last
            try:
                event = json.loads(text)
            except ValueError:
                continue
            if isinstance(event, dict) and event.get("event") == "run_finished":
                final = event
            elif isinstance(event, dict) and event.get("event") == "error":
                errors.append(event)
    status = final.get("status", "no run_finished")
    message = " ".join(str(final.get("message", "") if final else last).split()).replace("|", "/")
    flags = ""
    if with_flags:
        counts = {}
        for flag in final.get("flags") or []:
            severity = flag.get("severity", "?") if isinstance(flag, dict) else "?"
            counts[severity] = counts.get(severity, 0) + 1
        flags = (", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "-") + " | "
    why = (cause(final, errors) + " | ") if with_cause else ""
    print(f"| {label} | {status} | {seconds} | {why}{flags}{message[:300]} |")


if __name__ == "__main__":
    main()
