#!/usr/bin/env python3
"""One markdown row from a `pkbw ... --json` log: | LABEL | status | SECONDS | message |.

Usage: final_row.py LOG LABEL SECONDS [--flags]. The status and message are those of the log's run_finished
event ("no run_finished" when pkbw ended before it: its last line is shown instead); --flags adds a column
before the message counting the run's flags by severity ("info 2, suspect 1"; "-" when none)."""
import json
import sys


def main():
    path, label, seconds = sys.argv[1:4]
    with_flags = "--flags" in sys.argv[4:]
    final, last = {}, ""
    with open(path, errors="replace") as log:
        for text in log:
            last = text.strip() or last
            try:
                event = json.loads(text)
            except ValueError:
                continue
            if isinstance(event, dict) and event.get("event") == "run_finished":
                final = event
    status = final.get("status", "no run_finished")
    message = " ".join(str(final.get("message", "") if final else last).split()).replace("|", "/")
    flags = ""
    if with_flags:
        counts = {}
        for flag in final.get("flags") or []:
            severity = flag.get("severity", "?") if isinstance(flag, dict) else "?"
            counts[severity] = counts.get(severity, 0) + 1
        flags = (", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "-") + " | "
    print(f"| {label} | {status} | {seconds} | {flags}{message[:300]} |")


if __name__ == "__main__":
    main()
